// Package config is the one place that reads IronVise's environment
// variables (docs/design/cli.md#environment). Everything else takes typed
// options.
//
// # Why one place
//
// A security tool must not run with a configuration the operator did not
// mean. Every variable is parsed here, strictly: a malformed or unknown value
// is an error that names the variable and the accepted values, never a panic
// and never a silent default. All errors are collected so one run shows them
// all.
//
// # Usage
//
//	look, err := config.OSLookup(".env") // the process env, then .env (env wins)
//	cfg, err := config.Load(look)
//
// # Limitations
//
// Cross-variable rules that only some commands need (the guard backend is
// required for audit and serve, not for check) are methods on the sections,
// called by those commands.
package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Lookup returns the value of an environment variable and whether it is set.
// os.LookupEnv has this shape; tests pass a map.
type Lookup func(name string) (string, bool)

// MapLookup returns a Lookup over a fixed map.
func MapLookup(m map[string]string) Lookup {
	return func(name string) (string, bool) {
		v, ok := m[name]
		return v, ok
	}
}

// Error is one invalid variable.
type Error struct {
	Var      string // the variable name
	Value    string // the offending value (secrets are never echoed)
	Problem  string // what is wrong
	Accepted string // what would be accepted
}

// Error implements error.
func (e *Error) Error() string {
	s := e.Var
	if e.Value != "" {
		s += "=" + strconv.Quote(e.Value)
	}
	s += ": " + e.Problem
	if e.Accepted != "" {
		s += " (accepted: " + e.Accepted + ")"
	}
	return s
}

// Config is the validated configuration of one IronVise process.
type Config struct {
	// DataDir holds keys, the default ledger, tripwire.json and policies.
	DataDir string
	Scanner Scanner
	Agent   Agent
	Guard   Guard
	LLM     LLM
	Sandbox Sandbox
	Ledger  Ledger
	Webhook Webhook
	Server  Server
	// Host locates the user's credential stores (host.go).
	Host Host
}

// Load reads and validates every variable. It returns all problems at once,
// joined with errors.Join, each an *Error.
func Load(look Lookup) (*Config, error) {
	r := &reader{look: look}
	c := &Config{}
	c.DataDir = r.dataDir()
	c.Scanner = loadScanner(r)
	c.Agent = loadAgent(r)
	c.Guard = loadGuard(r)
	c.LLM = loadLLM(r)
	c.Sandbox = loadSandbox(r)
	c.Ledger = loadLedger(r)
	c.Server = loadServer(r)
	c.Webhook = loadWebhook(r)
	c.Host = loadHost(r)
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return c, nil
}

// reader collects parse errors while reading variables.
type reader struct {
	look Lookup
	errs []error
}

func (r *reader) fail(name, value, problem, accepted string) {
	r.errs = append(r.errs, &Error{Var: name, Value: value, Problem: problem, Accepted: accepted})
}

// get returns the trimmed value and whether the variable is set and
// non-empty. An empty value counts as unset, as with most shells' `X=`.
func (r *reader) get(name string) (string, bool) {
	v, ok := r.look(name)
	if !ok {
		return "", false
	}
	v = strings.TrimSpace(v)
	return v, v != ""
}

func (r *reader) str(name, def string) string {
	if v, ok := r.get(name); ok {
		return v
	}
	return def
}

// intRange reads an integer in [lo, hi]; set reports whether it was given.
func (r *reader) intRange(name string, def, lo, hi int) (v int, set bool) {
	s, ok := r.get(name)
	if !ok {
		return def, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		r.fail(name, s, "not an integer in range", fmt.Sprintf("%d to %d", lo, hi))
		return def, true
	}
	return n, true
}

// enum reads one of the allowed values, case-insensitive, returned lowercase.
func (r *reader) enum(name, def string, allowed ...string) string {
	s, ok := r.get(name)
	if !ok {
		return def
	}
	l := strings.ToLower(s)
	for _, a := range allowed {
		if l == a {
			return a
		}
	}
	r.fail(name, s, "unknown value", strings.Join(allowed, ", "))
	return def
}

// absPath reads a path that must be absolute.
func (r *reader) absPath(name, def string) string {
	s, ok := r.get(name)
	if !ok {
		return def
	}
	if !filepath.IsAbs(s) {
		r.fail(name, s, "not an absolute path", "an absolute path")
		return def
	}
	return filepath.Clean(s)
}

func (r *reader) dataDir() string {
	if d := r.absPath("ECTO_DATA_DIR", ""); d != "" {
		return d
	}
	if x := r.absPath("XDG_DATA_HOME", ""); x != "" {
		return filepath.Join(x, "ironvise")
	}
	home, ok := r.get("HOME")
	if !ok {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			r.fail("ECTO_DATA_DIR", "", "unset and no home directory to default to", "an absolute path")
			return ""
		}
	}
	return filepath.Join(home, ".local", "share", "ironvise")
}
