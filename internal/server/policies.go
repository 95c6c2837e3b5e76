package server

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/ironvise/ironvise/internal/policy"
)

// validPolicyName is docs/design/api.md#tokens-webhooks-policies: 1–64
// characters of a-z 0-9 - _, the first a letter or digit. Nothing else can
// name a file, so no name can reach outside the policies directory.
func validPolicyName(n string) bool {
	if len(n) < 1 || len(n) > 64 {
		return false
	}
	for i := 0; i < len(n); i++ {
		c := n[i]
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			return false
		}
	}
	return true
}

func isPack(name string) bool {
	_, ok := policy.PackBytes(name)
	return ok
}

func (s *Server) policiesDir() string { return filepath.Join(s.cfg.DataDir, "policies") }

// handleListPolicies is route 26: built-ins ∪ custom, byte-sorted.
func (s *Server) handleListPolicies(rc *reqCtx) {
	set := map[string]bool{}
	for _, p := range policy.Packs() {
		set[p] = true
	}
	entries, err := os.ReadDir(s.policiesDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		rc.fail(err)
		return
	}
	for _, e := range entries {
		n, ok := strings.CutSuffix(e.Name(), ".toml")
		if ok && !e.IsDir() && validPolicyName(n) {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	rc.writeJSON(http.StatusOK, out)
}

func (rc *reqCtx) policyName() (string, error) {
	n := rc.params["name"]
	if !validPolicyName(n) {
		return "", errf(http.StatusBadRequest, "policy name %q is not valid: 1–64 characters of a-z, 0-9, - and _, starting with a letter or digit", n)
	}
	return n, nil
}

// handleGetPolicy is route 27: the policy's TOML.
func (s *Server) handleGetPolicy(rc *reqCtx) {
	n, err := rc.policyName()
	if err != nil {
		rc.fail(err)
		return
	}
	b, ok := policy.PackBytes(n)
	if !ok {
		b, err = os.ReadFile(filepath.Join(s.policiesDir(), n+".toml"))
		if errors.Is(err, os.ErrNotExist) {
			rc.fail(errf(http.StatusNotFound, "policy %q not found", n))
			return
		}
		if err != nil {
			rc.fail(err)
			return
		}
	}
	h := rc.w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	rc.w.WriteHeader(http.StatusOK)
	rc.status = http.StatusOK
	if rc.r.Method != http.MethodHead {
		rc.w.Write(b)
	}
}

// handlePutPolicy is route 28: a custom policy, validated before it is
// written (atomically).
func (s *Server) handlePutPolicy(rc *reqCtx) {
	n, err := rc.policyName()
	if err != nil {
		rc.fail(err)
		return
	}
	if isPack(n) {
		rc.fail(errf(http.StatusForbidden, "%q is a built-in policy and cannot be written; save it under another name", n))
		return
	}
	p, err := policy.Parse(n+".toml", rc.body, policy.Options{})
	if err != nil {
		rc.fail(errf(http.StatusUnprocessableEntity, "invalid policy: %v%s", err, sdkPolicyHint(rc.body)))
		return
	}
	path := filepath.Join(s.policiesDir(), n+".toml")
	action := "create"
	if fileExists(path) {
		action = "update"
	}
	if err := s.writeRecorded(rc, path, "policies/"+n+".toml", rc.body, "policy", action, &n); err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, map[string]string{"name": n, "policy_hash": p.SHA256()})
}

// handleDeletePolicy is route 29.
func (s *Server) handleDeletePolicy(rc *reqCtx) {
	n, err := rc.policyName()
	if err != nil {
		rc.fail(err)
		return
	}
	if isPack(n) {
		rc.fail(errf(http.StatusForbidden, "%q is a built-in policy and cannot be deleted", n))
		return
	}
	// Recorded before it takes effect, as writeRecorded does.
	path := filepath.Join(s.policiesDir(), n+".toml")
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		rc.fail(errf(http.StatusNotFound, "policy %q not found", n))
		return
	}
	if err := s.adminChange(rc, "policy", "delete", &n); err != nil {
		rc.fail(err)
		return
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		rc.fail(err)
		return
	}
	rc.writeRawJSON(http.StatusOK, []byte(`{"ok":true}`))
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// sdkPolicyHint explains a refusal that the reference SDK's policy tests
// meet by design: they PUT a TOML of [metadata] and [rules] tables, which
// IronVise's strict policy schema does not have (a table it ignored would
// be a rule silently not enforced). docs/api.md "SDK compatibility".
func sdkPolicyHint(body []byte) string {
	for _, line := range strings.Split(string(body), "\n") {
		switch t := strings.TrimSpace(line); {
		case t == "[metadata]", t == "[rules]", strings.HasPrefix(t, "[[rules"), strings.HasPrefix(t, "[rules."):
			return "; this looks like the EctoLedger SDK's policy layout ([metadata], [rules]), which IronVise's policy schema does not accept: write the policy in IronVise's format (docs/policies.md; docs/api.md \"SDK compatibility\")"
		}
	}
	return ""
}
