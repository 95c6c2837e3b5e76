package tripwire

import (
	"errors"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// TestCustomArgRules: the structured keys of banned_arg_rules in an
// operator's own rules.
func TestCustomArgRules(t *testing.T) {
	ws := workspace(t)
	tw := setup(t, ws, map[string]any{"extra_banned_arg_rules": []map[string]any{
		{"id": "kubectl_delete", "program": "kubectl", "subcommand": "delete"},
		{"id": "openssl_out", "program": "openssl", "option": []string{"-out"}, "option_value": "/etc/.*"},
		{"id": "tar_abs", "program": "tar", "option": []string{"-C", "--directory"}, "option_value": "/", "absent": []string{"-t", "--list"}},
		{"id": "svc_last", "program": "svc", "last_operand": "prod", "except": "prod"},
		{"id": "legacy", "program": "tool", "require": []string{"-x"}},
	}})
	run(t, tw, []tcase{
		{"subcommand", rc("kubectl delete pod x"), verdict.CmdBannedArgs, "kubectl_delete", nil},
		{"subcommand elsewhere", rc("kubectl get pods delete"), verdict.OK, "", nil},
		{"one-dash option value", rc("openssl req -new -out /etc/x.pem"), verdict.CmdBannedArgs, "openssl_out", nil},
		{"option value elsewhere", rc("openssl req -out x.pem"), verdict.OK, "", nil},
		{"absent", rc("tar -C / -xf a.tar"), verdict.CmdBannedArgs, "tar_abs", nil},
		{"absent present", rc("tar -C / -tf a.tar"), verdict.OK, "", nil},
		{"except filters", rc("svc restart prod"), verdict.OK, "", nil},
		{"legacy require sees cluster options", rc("tool -vx"), verdict.CmdBannedArgs, "legacy", nil},
	})
	for _, tc := range []struct{ name, rule, want string }{
		{"no condition", `{"id":"x","program":"p"}`, "has no condition"},
		{"option without dash", `{"id":"x","program":"p","option":["r"]}`, `"r" is not an option name`},
		{"option with value", `{"id":"x","program":"p","option":["--a=b"]}`, "is not an option name"},
		{"bad operand regex", `{"id":"x","program":"p","operand":"("}`, "operand: bad regex"},
		{"subcommand type", `{"id":"x","program":"p","subcommand":1}`, "subcommand: expected string"},
		{"empty option list", `{"id":"x","program":"p","option":[]}`, "option: expected a non-empty array"},
		{"unknown key", `{"id":"x","program":"p","options":["-r"]}`, `unknown key (allowed: id, program, require, option`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadConfigBytes([]byte(`{"extra_banned_arg_rules":[`+tc.rule+`]}`), LoadOptions{Workspace: ws})
			var ce *ConfigError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}
