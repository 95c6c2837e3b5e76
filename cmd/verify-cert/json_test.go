package main

import (
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
)

// TestJSONFailures: with --json, every failure prints exactly one JSON
// value on stdout — the certificate result when there is one, else the
// error object — with ok false and the exit status as error.code.
func TestJSONFailures(t *testing.T) {
	absent := filepath.Join(t.TempDir(), "absent.elc")
	cases := []struct {
		name string
		args []string
		code int
		kind string
	}{
		{"no certificate", []string{"--json", "--issuer-key-file", issuerPub}, 2, "usage"},
		{"unknown flag after --json", []string{"--json", "--bogus", golden}, 2, "usage"},
		{"unknown flag before --json", []string{"--bogus", "-json", golden}, 2, "usage"},
		{"no pin", []string{"--json", golden}, 2, "usage"},
		{"bad --max-bytes", []string{"--json", "--issuer-key-file", issuerPub, "--max-bytes", "0", golden}, 2, "usage"},
		{"unreadable certificate", []string{"--json", "--issuer-key-file", issuerPub, absent}, 1, "failed"},
		{"unreadable checkpoint", []string{"--json", "--issuer-key-file", issuerPub, "--checkpoint", absent, golden}, 2, "error"},
		{"another issuer", []string{"--json", "--issuer-key", strings.Repeat("ab", 32), golden}, 1, "verification"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := verify(tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d; want %d\n%s%s", code, tc.code, out, errOut)
			}
			dec := json.NewDecoder(strings.NewReader(out))
			var v struct {
				OK    *bool `json:"ok"`
				Error struct {
					Kind    string `json:"kind"`
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("stdout is not JSON: %v\n%q", err, out)
			}
			if _, err := dec.Token(); err != io.EOF {
				t.Fatalf("more than one JSON value:\n%s", out)
			}
			if v.OK == nil || *v.OK || v.Error.Kind != tc.kind || v.Error.Code != tc.code || v.Error.Message == "" {
				t.Errorf("got %s; want ok false, kind %s, code %d", out, tc.kind, tc.code)
			}
		})
	}
	// Without --json, stdout stays empty on such a failure.
	if code, out, _ := verify("--issuer-key-file", issuerPub, absent); code != 1 || out != "" {
		t.Errorf("without --json: exit %d, stdout %q", code, out)
	}
	if code, out, _ := verify("--json=false", "--bogus", golden); code != 2 || out != "" {
		t.Errorf("--json=false: exit %d, stdout %q", code, out)
	}
}
