package cli

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestCheckProxyModeDestinations: `ironvise check` in proxy mode judges a
// command's destination by ECTO_SANDBOX_ALLOWED_DOMAINS and
// ECTO_SANDBOX_EGRESS_ALLOW_CIDRS, as the egress proxy would; in mode
// none it does not (the command has no network).
func TestCheckProxyModeDestinations(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	proxy := cliEnv(t, "ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "allowed.test,*.github.com",
		"ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "10.231.0.0/24")
	none := cliEnv(t)
	intent := func(cmd string) string {
		b, _ := json.Marshal(map[string]any{"action": "run_command", "params": map[string]string{"command": cmd}, "justification": "fetch the file"})
		return string(b)
	}
	cases := []struct {
		name      string
		env       map[string]string
		cmd       string
		check, vc string
		msg       string
	}{
		{"allowed host", proxy, "curl -fsS https://allowed.test/x", "guard", "guard_not_configured", ""},
		{"allowed wildcard by git", proxy, "git clone https://api.github.com/o/r", "guard", "guard_not_configured", ""},
		{"opted-in address", proxy, "curl http://10.231.0.9/", "guard", "guard_not_configured", ""},
		{"host off the list", proxy, "curl https://evil.test/", "tripwire", "egress_domain_not_allowed",
			"host evil.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"},
		{"metadata", proxy, "curl http://169.254.169.254/latest/meta-data/", "tripwire", "egress_ip_literal",
			"IP address 169.254.169.254 is not in ECTO_SANDBOX_EGRESS_ALLOW_CIDRS (IP targets are only dialled inside opted-in ranges)"},
		{"mode none", none, "curl https://evil.test/", "guard", "guard_not_configured", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, out, errOut := runCLI(t, tc.env, intent(tc.cmd), "check", "--workspace", ws)
			var v struct{ Decision, Check, Code, Message string }
			if err := json.Unmarshal([]byte(out), &v); err != nil {
				t.Fatalf("stdout is not verdict JSON: %v\n%s\n%s", err, out, errOut)
			}
			if v.Check != tc.check || v.Code != tc.vc || tc.msg != "" && v.Message != tc.msg {
				t.Fatalf("got %s %s %q; want %s %s %q", v.Check, v.Code, v.Message, tc.check, tc.vc, tc.msg)
			}
		})
	}
}
