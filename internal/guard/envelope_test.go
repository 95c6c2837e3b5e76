package guard

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
)

var testKey = bytes.Repeat([]byte{0x42}, KeyBytes)

func TestSealOpenRoundTrip(t *testing.T) {
	payload := []byte(`{"nonce":1,"verdict":"ALLOW"}`)
	line := seal(testKey, ResponseLabel, payload)
	if line[len(line)-1] != '\n' || bytes.Count(line, []byte{'\n'}) != 1 {
		t.Fatalf("line %q is not one \\n-terminated line", line)
	}
	// The MAC is HMAC-SHA256(key, label ‖ payload), independently computed.
	m := hmac.New(sha256.New, testKey)
	m.Write([]byte("ironvise-guard/1 response\n"))
	m.Write(payload)
	want := `{"payload":` + string(payload) + `,"mac":"` + hex.EncodeToString(m.Sum(nil)) + `"}` + "\n"
	if string(line) != want {
		t.Fatalf("seal = %q\nwant %q", line, want)
	}
	got, err := open(testKey, ResponseLabel, line[:len(line)-1])
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("open = %q, %v", got, err)
	}
}

func TestOpenRejectsReflection(t *testing.T) {
	// A request line echoed back must not pass as a response: the labels
	// differ, so the MAC does not verify.
	line := seal(testKey, RequestLabel, []byte(`{"nonce":1}`))
	if _, err := open(testKey, ResponseLabel, line[:len(line)-1]); !errors.Is(err, ErrBadMAC) {
		t.Fatalf("reflected request: err = %v, want ErrBadMAC", err)
	}
}

func TestOpenRejectsTampering(t *testing.T) {
	payload := []byte(`{"nonce":7,"verdict":"DENY","reason":"x"}`)
	line := seal(testKey, ResponseLabel, payload)
	line = line[:len(line)-1]
	macStart := bytes.Index(line, []byte(`"mac":"`)) + len(`"mac":"`)
	for i := range 64 {
		t.Run("mac char "+string(rune('0'+i%10)), func(t *testing.T) {
			bad := bytes.Clone(line)
			if bad[macStart+i] == 'a' {
				bad[macStart+i] = 'b'
			} else {
				bad[macStart+i] = 'a'
			}
			if _, err := open(testKey, ResponseLabel, bad); !errors.Is(err, ErrBadMAC) {
				t.Fatalf("flipped mac char %d: err = %v, want ErrBadMAC", i, err)
			}
		})
	}
	t.Run("payload byte", func(t *testing.T) {
		bad := bytes.Replace(line, []byte(`"DENY"`), []byte(`"ALLO"`), 1)
		if _, err := open(testKey, ResponseLabel, bad); !errors.Is(err, ErrBadMAC) {
			t.Fatalf("err = %v, want ErrBadMAC", err)
		}
	})
	t.Run("payload whitespace", func(t *testing.T) {
		// The MAC covers the bytes as received: re-formatting breaks it.
		bad := bytes.Replace(line, []byte(`{"nonce":7`), []byte(`{ "nonce":7`), 1)
		if _, err := open(testKey, ResponseLabel, bad); !errors.Is(err, ErrBadMAC) {
			t.Fatalf("err = %v, want ErrBadMAC", err)
		}
	})
	t.Run("other key", func(t *testing.T) {
		other := bytes.Repeat([]byte{0x43}, KeyBytes)
		if _, err := open(other, ResponseLabel, line); !errors.Is(err, ErrBadMAC) {
			t.Fatalf("err = %v, want ErrBadMAC", err)
		}
	})
}

func TestOpenMalformed(t *testing.T) {
	good := seal(testKey, RequestLabel, []byte(`{"a":1}`))
	good = good[:len(good)-1]
	mac := string(good[bytes.Index(good, []byte(`"mac":"`))+7 : len(good)-2])
	cases := []struct{ name, line string }{
		{"not json", `hello`},
		{"array", `[1,2]`},
		{"missing mac", `{"payload":{"a":1}}`},
		{"missing payload", `{"mac":"` + mac + `"}`},
		{"duplicate payload", `{"payload":{"a":2},"payload":{"a":1},"mac":"` + mac + `"}`},
		{"duplicate mac", `{"payload":{"a":1},"mac":"` + mac + `","mac":"` + mac + `"}`},
		{"case-folded key", `{"Payload":{"a":1},"mac":"` + mac + `"}`},
		{"unknown key", `{"payload":{"a":1},"mac":"` + mac + `","v":2}`},
		{"payload string", `{"payload":"{\"a\":1}","mac":"` + mac + `"}`},
		{"uppercase mac", `{"payload":{"a":1},"mac":"` + strings.ToUpper(mac) + `"}`},
		{"short mac", `{"payload":{"a":1},"mac":"` + mac[:62] + `"}`},
		{"mac not string", `{"payload":{"a":1},"mac":5}`},
		{"trailing data", `{"payload":{"a":1},"mac":"` + mac + `"} {}`},
		{"invalid utf-8", "{\"payload\":{\"a\":\"\xff\"},\"mac\":\"" + mac + "\"}"},
		{"truncated", `{"payload":{"a":1},"mac":"` + mac},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := open(testKey, RequestLabel, []byte(tc.line))
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("err = %v, want ErrMalformed", err)
			}
		})
	}
}

func TestReadLine(t *testing.T) {
	exact := strings.Repeat("a", MaxLineBytes)
	over := strings.Repeat("b", MaxLineBytes+1)
	br := bufio.NewReader(strings.NewReader(exact + "\n" + over + "\nnext\r\n" + "partial"))
	if got, err := readLine(br, MaxLineBytes); err != nil || len(got) != MaxLineBytes {
		t.Fatalf("exact 1 MiB line: %d bytes, %v", len(got), err)
	}
	if _, err := readLine(br, MaxLineBytes); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("1 MiB + 1 line: err = %v, want ErrLineTooLong", err)
	}
	// The oversize line was consumed: the stream is still in sync.
	if got, err := readLine(br, MaxLineBytes); err != nil || string(got) != "next\r" {
		t.Fatalf("line after the oversize one = %q, %v", got, err)
	}
	if _, err := readLine(br, MaxLineBytes); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("unterminated last line: err = %v, want io.ErrUnexpectedEOF", err)
	}
	if _, err := readLine(bufio.NewReader(strings.NewReader("")), MaxLineBytes); !errors.Is(err, io.EOF) {
		t.Fatalf("empty stream: err = %v, want io.EOF", err)
	}
}
