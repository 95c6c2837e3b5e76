package wire

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/strictjson"
)

// awkward are strings that exercise every escaping rule of encoding/json.
var awkward = []string{
	"", "ls -la", "echo \"hi\" \\ there", "<script>&amp;</script>", "tab\there\nnew\rline\b\f",
	"\x00\x01\x1f\x7f", "caf\u00e9 \u2028 \u2029 \U0001F600", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate bytes",
}

func TestAppendRequestIsJSONMarshal(t *testing.T) {
	for _, s := range awkward {
		for _, r := range []*Request{
			{Command: s, Workspace: "/w", Justification: s},
			{Command: "c", Session: s, Workspace: s, Policy: s, PolicySHA256: s, WorkspaceMode: s, Justification: "", Output: s, Program: s, Env: []string{s, "LANG=" + s}},
			{Env: []string{}},
		} {
			want, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if got := AppendRequest(nil, r); !bytes.Equal(got, want) {
				t.Fatalf("AppendRequest(%+v)\n got %s\nwant %s", r, got, want)
			}
		}
	}
}

func FuzzAppendRequest(f *testing.F) {
	for _, s := range awkward {
		f.Add(s, s, "")
	}
	f.Fuzz(func(t *testing.T, a, b, c string) {
		r := &Request{Command: a, Session: b, Workspace: c, Policy: a, PolicySHA256: c, WorkspaceMode: a, Justification: b, Output: c, Program: b, Env: []string{a, c}}
		want, _ := json.Marshal(r)
		if got := AppendRequest(nil, r); !bytes.Equal(got, want) {
			t.Fatalf("got %s\nwant %s", got, want)
		}
	})
}

func sameResponse(a, b *Response) bool {
	return bytes.Equal(a.Stdout, b.Stdout) && bytes.Equal(a.Stderr, b.Stderr) && a.Code == b.Code && a.Error == b.Error && a.NotStarted == b.NotStarted
}

func TestParseResponseReadsWhatTheDaemonWrites(t *testing.T) {
	for _, s := range awkward {
		for _, r := range []*Response{
			{},
			{Stdout: []byte(s), Stderr: []byte(s + "x"), Code: 137, Error: s, NotStarted: true},
			{Code: -1 << 31, Stdout: []byte{0, 0xff, 0xfe}},
		} {
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			// What the daemon's decoder reads: invalid UTF-8 in a
			// string went over the wire as U+FFFD.
			var want Response
			if err := strictjson.Unmarshal(b, 8, &want); err != nil {
				t.Fatal(err)
			}
			got, err := ParseResponse(b)
			if err != nil || !sameResponse(got, &want) {
				t.Fatalf("ParseResponse(%s) = %+v, %v; want %+v", b, got, err, want)
			}
		}
	}
}

// responseSeeds are accepted and refused forms, each checked against the
// daemon's own decoder.
var responseSeeds = []string{
	`{"stdout":"aGk=","code":3,"error":"x"}`, ` { "code" : -0 , "not_started" : false } `, `{}`,
	`{"code":null,"stdout":null}`, `{"error":"\u00e9\ud83d\ude00\/\b"}`, `{"stdout":"aGk=\n"}`,
	`{"code":1,"code":2}`, `{"Code":1}`, `{"extra":1}`, `{"code":1.0}`, `{"code":1e2}`, `{"code":01}`,
	`{"code":99999999999999999999}`, `{"error":"\ud800"}`, `{"error":"\udc00"}`, `{"error":"` + "\xff" + `"}`,
	`{"error":"` + "\x01" + `"}`, `{"code":1}x`, `{"code":1,}`, `{"stdout":"!!"}`, `{"stdout":[1]}`,
	`{"not_started":1}`, `[]`, `"x"`, ``, `{"\u0063ode":1}`, `{"error":"a\u0000b"}`, `{"code":-}`,
}

func FuzzParseResponse(f *testing.F) {
	for _, s := range responseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseResponse(data)
		var want Response
		werr := strictjson.Unmarshal(data, 8, &want)
		if err == nil && (werr != nil || !sameResponse(got, &want)) {
			t.Fatalf("ParseResponse accepted %q as %+v; the daemon's decoder: %+v, %v", data, got, want, werr)
		}
	})
}

// TestParseResponseRefusals: ParseResponse refuses what the daemon's
// decoder refuses, and is stricter only in form: bytes as an array of
// numbers, which encoding/json also reads, are not what it writes.
func TestParseResponseRefusals(t *testing.T) {
	stricter := map[string]bool{`{"stdout":[1]}`: true}
	for _, s := range responseSeeds {
		_, err := ParseResponse([]byte(s))
		var want Response
		werr := strictjson.Unmarshal([]byte(s), 8, &want)
		if (err == nil) != (werr == nil && !stricter[s]) {
			t.Errorf("%q: ParseResponse %v, the daemon's decoder %v", s, err, werr)
		}
	}
}

func TestPathIsFilepathJoin(t *testing.T) {
	for _, d := range []string{"/data", "/data/", "/a/../b", "rel", ""} {
		if got, want := Path(d), filepath.Join(d, "run", "ironvise.sock"); got != want {
			t.Errorf("Path(%q) = %q; want %q", d, got, want)
		}
	}
	if !strings.HasSuffix(Path("/d"), "/run/ironvise.sock") {
		t.Fatal(Path("/d"))
	}
}
