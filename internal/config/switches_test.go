package config

import (
	"errors"
	"strings"
	"testing"
)

// switchField reads the field a yes/no variable sets.
var switchField = map[string]func(*Config) bool{
	"ECTO_SANDBOX_PERMISSIVE":       func(c *Config) bool { return c.Sandbox.Permissive },
	"ECTO_DEMO_MODE":                func(c *Config) bool { return c.Server.DemoMode },
	"GUARD_REQUIRED":                func(c *Config) bool { return c.Guard.Required },
	"WEBHOOK_INCLUDE_GUARD":         func(c *Config) bool { return c.Webhook.IncludeGuard },
	"WEBHOOK_INCLUDE_TRIPWIRE":      func(c *Config) bool { return c.Webhook.IncludeTripwire },
	"WEBHOOK_ALLOW_PRIVATE_TARGETS": func(c *Config) bool { return c.Webhook.AllowPrivateTargets },
}

// TestSwitchesAcceptOnlyDocumentedSpellings covers every yes/no variable:
// the documented spellings set the field, unset and empty keep the
// default, and anything else — a padded value above all, which an earlier
// reader trimmed and accepted — is a startup error naming the variable.
func TestSwitchesAcceptOnlyDocumentedSpellings(t *testing.T) {
	type want struct {
		on  bool   // the field's value when accepted
		err string // the problem, when refused
	}
	accept := func(on bool) want { return want{on: on} }
	refuse := func(problem string) want { return want{err: problem} }
	const padded, unknown = "has leading or trailing blanks", "unknown value"
	cases := []struct {
		name, value string
		want        want
	}{
		{"ECTO_SANDBOX_PERMISSIVE", "true", accept(true)},
		{"ECTO_SANDBOX_PERMISSIVE", "false", accept(false)},
		{"ECTO_SANDBOX_PERMISSIVE", "", accept(false)},
		// The two values: both were trimmed and turned confinement off.
		{"ECTO_SANDBOX_PERMISSIVE", " true", refuse(padded)},
		{"ECTO_SANDBOX_PERMISSIVE", "true ", refuse(padded)},
		{"ECTO_SANDBOX_PERMISSIVE", "\ttrue", refuse(padded)},
		{"ECTO_SANDBOX_PERMISSIVE", "true\n", refuse(padded)},
		{"ECTO_SANDBOX_PERMISSIVE", " false ", refuse(padded)},
		// Blanks only were "unset" after trimming; they are not empty.
		{"ECTO_SANDBOX_PERMISSIVE", "  ", refuse(padded)},
		{"ECTO_SANDBOX_PERMISSIVE", "TRUE", refuse(unknown)},
		{"ECTO_SANDBOX_PERMISSIVE", `"true"`, refuse(unknown)},

		{"ECTO_DEMO_MODE", "1", accept(true)},
		{"ECTO_DEMO_MODE", "TRUE", accept(true)},
		{"ECTO_DEMO_MODE", "0", accept(false)},
		{"ECTO_DEMO_MODE", " 1", refuse(padded)},
		{"ECTO_DEMO_MODE", "true ", refuse(padded)},
		{"ECTO_DEMO_MODE", "yes", refuse(unknown)},

		{"GUARD_REQUIRED", "", accept(true)},
		{"GUARD_REQUIRED", "true", accept(true)},
		{"GUARD_REQUIRED", "Yes", accept(true)},
		{"GUARD_REQUIRED", "1", accept(true)},
		{"GUARD_REQUIRED", "false", accept(false)},
		{"GUARD_REQUIRED", "No", accept(false)},
		{"GUARD_REQUIRED", "0", accept(false)},
		// Padding used to turn the guard off.
		{"GUARD_REQUIRED", " false", refuse(padded)},
		{"GUARD_REQUIRED", "  FALSE ", refuse(padded)},
		{"GUARD_REQUIRED", "no\r", refuse(padded)},
		// An unknown word used to mean "required", whatever was meant.
		{"GUARD_REQUIRED", "off", refuse(unknown)},
		{"GUARD_REQUIRED", "disabled", refuse(unknown)},

		{"WEBHOOK_INCLUDE_GUARD", "False", accept(false)},
		{"WEBHOOK_INCLUDE_GUARD", " false", refuse(padded)},
		{"WEBHOOK_INCLUDE_TRIPWIRE", "FALSE", accept(false)},
		{"WEBHOOK_INCLUDE_TRIPWIRE", "false ", refuse(padded)},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "true", accept(true)},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", " true", refuse(padded)},
		{"WEBHOOK_ALLOW_PRIVATE_TARGETS", "on", refuse(unknown)},
	}
	for _, tc := range cases {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			t.Parallel()
			c, err := Load(MapLookup(map[string]string{"HOME": "/h", tc.name: tc.value}))
			if tc.want.err == "" {
				if err != nil {
					t.Fatalf("Load: %v; want %s accepted", err, tc.name)
				}
				if got := switchField[tc.name](c); got != tc.want.on {
					t.Fatalf("got %v; want %v", got, tc.want.on)
				}
				return
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("got %v; want a *config.Error", err)
			}
			if ce.Var != tc.name || ce.Value != tc.value || ce.Problem != tc.want.err || ce.Accepted == "" {
				t.Fatalf("got %+v; want variable %s, value %q, problem %q and the accepted values", ce, tc.name, tc.value, tc.want.err)
			}
		})
	}
}

func TestSwitchErrorNamesVariableAndAcceptedValues(t *testing.T) {
	_, err := Load(MapLookup(map[string]string{"HOME": "/h", "ECTO_SANDBOX_PERMISSIVE": " true"}))
	const want = `ECTO_SANDBOX_PERMISSIVE=" true": has leading or trailing blanks (accepted: true, false, or unset, written without blanks)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v; want %s", err, want)
	}
	_, err = Load(MapLookup(map[string]string{"HOME": "/h", "GUARD_REQUIRED": "off"}))
	if err == nil || !strings.Contains(err.Error(), `GUARD_REQUIRED="off": unknown value (accepted: true, 1, yes, false, 0, no (any case), or unset)`) {
		t.Fatalf("got %v", err)
	}
}

// FuzzSwitchVar: a yes/no variable is either refused or set from a value
// that is exactly one of its spellings; nothing else ever sets it.
func FuzzSwitchVar(f *testing.F) {
	f.Add(" true")      // the leading blank
	f.Add("true ")      // the trailing blank
	f.Add("true")       // the one spelling that turns confinement off
	f.Add("tRue")       // case is not folded for this variable
	f.Add("\u00a0true") // a no-break space pads too
	f.Add("")           // empty counts as unset
	f.Fuzz(func(t *testing.T, v string) {
		c, err := Load(MapLookup(map[string]string{"HOME": "/h", "ECTO_SANDBOX_PERMISSIVE": v}))
		if err != nil {
			return
		}
		if c.Sandbox.Permissive != (v == "true") {
			t.Fatalf("ECTO_SANDBOX_PERMISSIVE=%q accepted as %v", v, c.Sandbox.Permissive)
		}
		if !c.Sandbox.Permissive && v != "" && v != "false" {
			t.Fatalf("ECTO_SANDBOX_PERMISSIVE=%q accepted", v)
		}
	})
}
