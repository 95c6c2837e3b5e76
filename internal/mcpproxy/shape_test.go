package mcpproxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// shapedOf decodes JSON arguments and lists the shaped ones as
// "arg=action:value".
func shapedOf(t *testing.T, js string) ([]string, bool) {
	t.Helper()
	var args map[string]any
	if err := json.Unmarshal([]byte(js), &args); err != nil {
		t.Fatal(err)
	}
	out, over := shapedArgs(args)
	var got []string
	for _, s := range out {
		got = append(got, s.arg+"="+string(s.in.Action)+":"+s.in.Target())
	}
	return got, over
}

func TestShapedArgs(t *testing.T) {
	cases := []struct{ args, want string }{
		// By key, at any depth, in arrays, whatever the key's case or dashes.
		{`{"path":"notes.txt"}`, "path=read_file:notes.txt"},
		{`{"File-Path":"a"}`, "File-Path=read_file:a"},
		{`{"opts":{"targets":{"dir":["x","y"]}}}`, "opts.targets.dir[0]=read_file:x opts.targets.dir[1]=read_file:y"},
		{`{"url":"example.com/x"}`, "url=http_get:example.com/x"},
		{`{"cmd":"rm -rf /"}`, "cmd=run_command:rm -rf /"},
		// By shape, under keys that say nothing.
		{`{"q":"/etc/shadow"}`, "q=read_file:/etc/shadow"},
		{`{"q":"~/.ssh/id_rsa"}`, "q=read_file:~/.ssh/id_rsa"},
		{`{"q":"../../secret"}`, "q=read_file:../../secret"},
		{`{"q":"C:\\Users\\me"}`, `q=read_file:C:\Users\me`},
		{`{"q":"http://169.254.169.254/"}`, "q=http_get:http://169.254.169.254/"},
		{`{"q":"file:///etc/passwd"}`, "q=read_file:/etc/passwd"},
		{`{"q":"gopher://internal:70/"}`, "q=http_get:gopher://internal:70/"},
		// Not shaped: prose, numbers, a path key's non-string value.
		{`{"q":"hello world","n":3,"path":7}`, ""},
		{`{"q":"see http://x.example/ for details"}`, ""},
	}
	for _, c := range cases {
		got, over := shapedOf(t, c.args)
		if over || strings.Join(got, " ") != c.want {
			t.Errorf("%s: %q (over %v); want %q", c.args, got, over, c.want)
		}
	}
}

// Arguments nested deeper than the walk goes, or more shaped arguments than
// it checks, are refused rather than partly checked.
func TestShapedArgsLimits(t *testing.T) {
	deep := `"/etc/shadow"`
	for range maxDepth + 2 {
		deep = `{"a":` + deep + `}`
	}
	if _, over := shapedOf(t, `{"x":`+deep+`}`); !over {
		t.Error("deep nesting was not refused")
	}
	var many []string
	for i := range maxShaped + 1 {
		many = append(many, fmt.Sprintf(`"/p%d"`, i))
	}
	if _, over := shapedOf(t, `{"paths":[`+strings.Join(many, ",")+`]}`); !over {
		t.Error("too many shaped arguments were not refused")
	}
	if got, over := shapedOf(t, `{"paths":[`+strings.Join(many[:maxShaped], ",")+`]}`); over || len(got) != maxShaped {
		t.Errorf("%d shaped arguments (over %v); want %d checked", len(got), over, maxShaped)
	}
}
