package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/ironvise/ironvise/internal/ledger/postgres"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// configJSON is the Config of docs/design/api.md#config-shape; string fields
// are never null.
type configJSON struct {
	DatabaseURL         string   `json:"database_url"`
	LLMBackend          string   `json:"llm_backend"`
	OllamaBaseURL       string   `json:"ollama_base_url"`
	OllamaModel         string   `json:"ollama_model"`
	GuardRequired       bool     `json:"guard_required"`
	GuardLLMBackend     *string  `json:"guard_llm_backend"`
	GuardLLMModel       *string  `json:"guard_llm_model"`
	MaxSteps            int      `json:"max_steps"`
	AgentAllowedDomains []string `json:"agent_allowed_domains"`
	SandboxMode         string   `json:"sandbox_mode"`
	EVMEnabled          bool     `json:"evm_enabled"`
	DemoMode            bool     `json:"demo_mode"`
	SandboxPermissive   bool     `json:"sandbox_permissive"`
}

// currentConfig is the merged configuration: settings.json over the
// environment over the defaults.
func (s *Server) currentConfig() configJSON {
	c := s.settings.apply(s.opts.Config)
	db := c.Ledger.DatabaseURL
	if db == "" {
		db = "sqlite://" + filepath.Join(c.DataDir, "ledger.db")
	}
	domains := c.Agent.AllowedDomains
	if domains == nil {
		domains = []string{}
	}
	return configJSON{
		DatabaseURL: postgres.Redact(db), LLMBackend: c.LLM.Backend, OllamaBaseURL: c.LLM.OllamaBaseURL, OllamaModel: c.LLM.OllamaModel,
		GuardRequired: c.Guard.Required, GuardLLMBackend: optStr(c.Guard.Backend), GuardLLMModel: optStr(c.Guard.Model),
		MaxSteps: c.Agent.MaxSteps, AgentAllowedDomains: domains, SandboxMode: string(s.opts.Tier.Name()),
		EVMEnabled: false, DemoMode: s.cfg.Server.DemoMode, SandboxPermissive: s.cfg.Sandbox.Permissive,
	}
}

// handleGetConfig is route 33.
func (s *Server) handleGetConfig(rc *reqCtx) { rc.writeJSON(http.StatusOK, s.currentConfig()) }

// handlePutConfig is route 34: merged into settings.json; other keys are
// ignored.
func (s *Server) handlePutConfig(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	var p settingsFile
	strField := func(key string, dst **string, nullable bool) error {
		if nullable {
			if raw, ok := o[key]; ok && bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
				empty := ""
				*dst = &empty
				return nil
			}
		}
		v, ok, err := o.str(key, false)
		if ok {
			*dst = &v
		}
		return err
	}
	var errs []error
	errs = append(errs, strField("database_url", &p.DatabaseURL, false), strField("llm_backend", &p.LLMBackend, false),
		strField("ollama_base_url", &p.OllamaBaseURL, false), strField("ollama_model", &p.OllamaModel, false),
		strField("guard_llm_backend", &p.GuardLLMBackend, true), strField("guard_llm_model", &p.GuardLLMModel, true))
	if v, ok, err := o.boolean("guard_required", false); err != nil {
		errs = append(errs, err)
	} else if ok {
		p.GuardRequired = &v
	}
	if v, ok, err := o.integer("max_steps"); err != nil {
		errs = append(errs, err)
	} else if ok {
		n := int(v)
		if int64(n) != v {
			n = -1
		}
		p.MaxSteps = &n
	}
	if v, ok, err := o.strings("agent_allowed_domains"); err != nil {
		errs = append(errs, err)
	} else if ok {
		p.AgentAllowedDomains = &v
	}
	if err := firstAPIError(errs...); err != nil {
		rc.fail(err)
		return
	}
	if err := s.settings.merge(p, func() error { return s.adminChange(rc, "config", "update", nil) }); err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, s.currentConfig())
}

// tripwireJSON is the Tripwire of docs/design/api.md#config-shape.
type tripwireJSON struct {
	AllowedPaths          []string `json:"allowed_paths"`
	AllowedDomains        []string `json:"allowed_domains"`
	BannedCommandPatterns []string `json:"banned_command_patterns"`
	MinJustification      int      `json:"min_justification_length"`
	RequireHTTPS          bool     `json:"require_https"`
}

func (s *Server) tripwirePath() string { return filepath.Join(s.cfg.DataDir, tripwireFile) }

// readTripwireRaw returns tripwire.json's members ({} when it is absent).
func (s *Server) readTripwireRaw() (map[string]json.RawMessage, error) {
	b, err := os.ReadFile(s.tripwirePath())
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil || m == nil {
		return nil, errf(http.StatusConflict, "%s is not a JSON object; fix or remove the file", s.tripwirePath())
	}
	return m, nil
}

// tripwireView renders the effective configuration.
func (s *Server) tripwireView() (tripwireJSON, error) {
	cfg := s.sessionConfig()
	tc, err := s.loadTripwireConfig(cfg)
	if err != nil {
		return tripwireJSON{}, errf(http.StatusConflict, "%v", err)
	}
	raw, err := s.readTripwireRaw()
	if err != nil {
		return tripwireJSON{}, err
	}
	extra := []string{}
	if v, ok := raw["extra_banned_programs"]; ok {
		json.Unmarshal(v, &extra)
	}
	nn := func(l []string) []string {
		if l == nil {
			return []string{}
		}
		return l
	}
	return tripwireJSON{AllowedPaths: nn(tc.AllowedRoots), AllowedDomains: nn(tc.AllowedDomains), BannedCommandPatterns: nn(extra),
		MinJustification: tc.MinJustification, RequireHTTPS: tc.RequireHTTPS}, nil
}

// handleGetTripwire is route 35.
func (s *Server) handleGetTripwire(rc *reqCtx) {
	v, err := s.tripwireView()
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, v)
}

// handlePutTripwire is route 36: absent fields keep their values, arrays
// replace whole; the result is validated like tripwire.json at load and
// saved atomically.
func (s *Server) handlePutTripwire(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	paths, hasPaths, e1 := o.strings("allowed_paths")
	domains, hasDomains, e2 := o.strings("allowed_domains")
	banned, hasBanned, e3 := o.strings("banned_command_patterns")
	minJ, hasMin, e4 := o.integer("min_justification_length")
	https, hasHTTPS, e5 := o.boolean("require_https", false)
	if err := firstAPIError(e1, e2, e3, e4, e5); err != nil {
		rc.fail(err)
		return
	}
	for _, list := range []struct {
		name string
		v    []string
	}{{"allowed_paths", paths}, {"allowed_domains", domains}, {"banned_command_patterns", banned}} {
		for _, e := range list.v {
			if strings.TrimSpace(e) == "" {
				rc.fail(errf(http.StatusBadRequest, "%s: entries must be non-empty strings", list.name))
				return
			}
		}
	}
	for _, b := range banned {
		// Patterns are basename globs, never raw substrings: a "/" or a
		// space could never match a program name and would only give a
		// false sense of protection.
		if strings.ContainsAny(b, " \t\n\r/") {
			rc.fail(errf(http.StatusBadRequest, "banned_command_patterns: %q must be a program-name glob without whitespace or /", b))
			return
		}
	}
	if hasMin && (minJ < 0 || minJ > 1000) {
		rc.fail(errf(http.StatusBadRequest, "min_justification_length %d: must be from 0 to 1000", minJ))
		return
	}
	raw, err := s.readTripwireRaw()
	if err != nil {
		rc.fail(err)
		return
	}
	set := func(key string, v any) {
		b, _ := json.Marshal(v)
		raw[key] = b
	}
	if hasPaths {
		set("allowed_roots", paths)
	}
	if hasDomains {
		set("allowed_domains", domains)
	}
	if hasBanned {
		set("extra_banned_programs", banned)
	}
	if hasMin {
		set("min_justification_length", minJ)
	}
	if hasHTTPS {
		set("require_https", https)
	}
	data, err := json.MarshalIndent(raw, "", "  ")
	if err != nil {
		rc.fail(err)
		return
	}
	cfg := s.sessionConfig()
	if _, err := tripwire.LoadConfigBytes(data, tripwire.LoadOptions{Workspace: s.opts.Workspace, EnvDomains: cfg.Agent.AllowedDomains, EnvDomainsSet: cfg.Agent.AllowedDomainsSet}); err != nil {
		rc.fail(errf(http.StatusBadRequest, "%v", err))
		return
	}
	if err := s.writeRecorded(rc, s.tripwirePath(), tripwireFile, append(data, '\n'), "tripwire", "update", nil); err != nil {
		rc.fail(err)
		return
	}
	v, err := s.tripwireView()
	if err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, v)
}
