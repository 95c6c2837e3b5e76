package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/strictjson"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// settingsFile is $ECTO_DATA_DIR/settings.json: what the dashboard's
// settings page saves through PUT /api/config
// (docs/design/api.md#config-and-tripwire). Absent fields leave the
// environment's value in force.
type settingsFile struct {
	DatabaseURL         *string   `json:"database_url,omitempty"`
	LLMBackend          *string   `json:"llm_backend,omitempty"`
	OllamaBaseURL       *string   `json:"ollama_base_url,omitempty"`
	OllamaModel         *string   `json:"ollama_model,omitempty"`
	GuardRequired       *bool     `json:"guard_required,omitempty"`
	GuardLLMBackend     *string   `json:"guard_llm_backend,omitempty"`
	GuardLLMModel       *string   `json:"guard_llm_model,omitempty"`
	MaxSteps            *int      `json:"max_steps,omitempty"`
	AgentAllowedDomains *[]string `json:"agent_allowed_domains,omitempty"`
}

// settingsStore holds settings.json; writes are atomic (temp file, rename).
type settingsStore struct {
	path string
	mu   sync.Mutex
	cur  settingsFile // guarded by mu
}

// SettingsFile is the name of the settings file in the data dir.
const SettingsFile = "settings.json"

func openSettings(dataDir string) (*settingsStore, error) {
	st := &settingsStore{path: filepath.Join(dataDir, SettingsFile)}
	b, err := os.ReadFile(st.path)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("server: read %s: %w", st.path, err)
	}
	if err := strictjson.Unmarshal(b, 4, &st.cur); err != nil {
		return nil, fmt.Errorf("server: %s is not valid settings JSON: %w (fix or remove the file)", st.path, err)
	}
	if err := st.cur.validate(); err != nil {
		return nil, fmt.Errorf("server: %s: %w (fix or remove the file)", st.path, err)
	}
	return st, nil
}

func (st *settingsStore) get() settingsFile {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.cur
}

// apply returns a copy of base with the settings in force: settings.json
// over the environment, except database_url, where DATABASE_URL wins.
func (st *settingsStore) apply(base *config.Config) *config.Config {
	c := *base
	f := st.get()
	if f.DatabaseURL != nil && c.Ledger.DatabaseURL == "" {
		c.Ledger.DatabaseURL = *f.DatabaseURL
	}
	if f.LLMBackend != nil {
		c.LLM.Backend = *f.LLMBackend
	}
	if f.OllamaBaseURL != nil {
		c.LLM.OllamaBaseURL = *f.OllamaBaseURL
	}
	if f.OllamaModel != nil {
		c.LLM.OllamaModel = *f.OllamaModel
	}
	if f.GuardRequired != nil {
		c.Guard.Required = *f.GuardRequired
	}
	if f.GuardLLMBackend != nil {
		c.Guard.Backend = *f.GuardLLMBackend
	}
	if f.GuardLLMModel != nil {
		c.Guard.Model = *f.GuardLLMModel
	}
	if f.MaxSteps != nil {
		c.Agent.MaxSteps, c.Agent.MaxStepsSet = *f.MaxSteps, true
	}
	if f.AgentAllowedDomains != nil {
		c.Agent.AllowedDomains, c.Agent.AllowedDomainsSet = append([]string(nil), (*f.AgentAllowedDomains)...), true
	}
	return &c
}

// merge validates a patch, merges it and saves the file atomically, calling
// record (the admin_change event) once the new file is staged, before it
// takes effect; a record that fails leaves the settings as they were.
func (st *settingsStore) merge(p settingsFile, record func() error) error {
	if err := p.validate(); err != nil {
		return errf(http.StatusBadRequest, "%v", err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	next := st.cur
	set := func(dst **string, v *string) {
		if v != nil {
			*dst = v
		}
	}
	set(&next.DatabaseURL, p.DatabaseURL)
	set(&next.LLMBackend, p.LLMBackend)
	set(&next.OllamaBaseURL, p.OllamaBaseURL)
	set(&next.OllamaModel, p.OllamaModel)
	set(&next.GuardLLMBackend, p.GuardLLMBackend)
	set(&next.GuardLLMModel, p.GuardLLMModel)
	if p.GuardRequired != nil {
		next.GuardRequired = p.GuardRequired
	}
	if p.MaxSteps != nil {
		next.MaxSteps = p.MaxSteps
	}
	if p.AgentAllowedDomains != nil {
		next.AgentAllowedDomains = p.AgentAllowedDomains
	}
	b, err := json.MarshalIndent(next, "", "  ")
	if err != nil {
		return err
	}
	f, err := stageFile(st.path, append(b, '\n'), 0o600)
	if err != nil {
		return fileWriteError(settingsFileName, err)
	}
	defer f.discard()
	if err := record(); err != nil {
		return err
	}
	if err := f.commit(); err != nil {
		return fileWriteError(settingsFileName, err)
	}
	st.cur = next
	return nil
}

// settingsFileName is the settings file's name in the data directory.
const settingsFileName = "settings.json"

// fileWriteError is the answer to a failed write of a file of the data
// directory: the file and the cause, with the fix (it used to be answered
// "database unavailable", because the errno looked like a network error).
func fileWriteError(name string, err error) error {
	cause := err.Error()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		cause = pe.Err.Error()
	}
	if f := ledger.Classify(err); f.Kind == ledger.FailureStorageFull {
		return errf(http.StatusInsufficientStorage, "saving %s in the data directory failed: %s; free space on the volume of ECTO_DATA_DIR, then retry (the setting was not changed)", name, f.Cause)
	}
	return errf(http.StatusInternalServerError, "saving %s in the data directory failed: %s; check that ECTO_DATA_DIR is writable by the IronVise user (the setting was not changed)", name, cause)
}

var llmBackends = []string{"ollama", "openai", "anthropic", "mock"}

// validate checks the values (docs/design/api.md#config-and-tripwire); a bad
// value is a 400.
func (f *settingsFile) validate() error {
	if f.DatabaseURL != nil {
		u := *f.DatabaseURL
		ok := u == "sqlite::memory:" || (strings.HasPrefix(u, "sqlite:") && strings.TrimPrefix(strings.TrimPrefix(u, "sqlite:"), "//") != "") ||
			strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
		if !ok {
			return errors.New("database_url: unknown scheme or empty path (accepted: sqlite://PATH, sqlite:PATH, sqlite::memory:, postgres://…, postgresql://…)")
		}
	}
	if f.LLMBackend != nil && !oneOf(*f.LLMBackend, llmBackends) {
		return fmt.Errorf("llm_backend %q: unknown backend (accepted: %s)", *f.LLMBackend, strings.Join(llmBackends, ", "))
	}
	if f.OllamaBaseURL != nil {
		u, err := url.Parse(*f.OllamaBaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("ollama_base_url %q: not an http(s) URL", *f.OllamaBaseURL)
		}
	}
	if f.OllamaModel != nil && strings.TrimSpace(*f.OllamaModel) == "" {
		return errors.New("ollama_model: must not be empty")
	}
	if f.GuardLLMBackend != nil && *f.GuardLLMBackend != "" && !oneOf(*f.GuardLLMBackend, llmBackends) {
		return fmt.Errorf("guard_llm_backend %q: unknown backend (accepted: %s, or empty for none)", *f.GuardLLMBackend, strings.Join(llmBackends, ", "))
	}
	if f.MaxSteps != nil && (*f.MaxSteps < 1 || *f.MaxSteps > 1000) {
		return fmt.Errorf("max_steps %d: must be from 1 to 1000", *f.MaxSteps)
	}
	if f.AgentAllowedDomains != nil {
		for _, d := range *f.AgentAllowedDomains {
			if strings.TrimSpace(d) == "" {
				return errors.New("agent_allowed_domains: entries must be non-empty strings")
			}
		}
		// The same rules as tripwire.json's allowed_domains.
		probe, _ := json.Marshal(map[string]any{"allowed_domains": *f.AgentAllowedDomains})
		if _, err := tripwire.LoadConfigBytes(probe, tripwire.LoadOptions{Workspace: "/"}); err != nil {
			return fmt.Errorf("agent_allowed_domains: %s", strings.ReplaceAll(err.Error(), "tripwire.json: $.allowed_domains", "entry"))
		}
	}
	return nil
}

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// stagedFile is a file's new content written and synced beside it, not in
// place yet; commit renames it over the file, so a reader never sees half
// a file. A change that must be recorded first (an admin_change event) is
// recorded between stageFile and commit, so a failed record leaves the
// file as it was.
type stagedFile struct {
	tmp, path string
	done      bool
}

// stageFile writes data to a temporary file beside path.
func stageFile(path string, data []byte, mode os.FileMode) (*stagedFile, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("server: create %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("server: write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("server: write %s: %w", path, err)
	}
	return &stagedFile{tmp: f.Name(), path: path}, nil
}

// commit puts the staged content in place.
func (f *stagedFile) commit() error {
	if err := os.Rename(f.tmp, f.path); err != nil {
		return fmt.Errorf("server: write %s: %w", f.path, err)
	}
	f.done = true
	return nil
}

// discard removes the staged content unless it was committed.
func (f *stagedFile) discard() {
	if !f.done {
		os.Remove(f.tmp)
	}
}

// sessionConfig is the configuration new sessions use: the startup
// configuration with the current settings (guard, step limit, domains apply
// to sessions created after a PUT /api/config).
func (s *Server) sessionConfig() *config.Config {
	c := s.settings.apply(s.opts.Config)
	// The LLM backend and the database apply at the next start only.
	c.LLM = s.cfg.LLM
	c.Ledger = s.cfg.Ledger
	return c
}

// checkStartupFiles stops serve when tripwire.json cannot be used, naming
// the file (docs/design/api.md#config-and-tripwire).
func (s *Server) checkStartupFiles() error {
	if _, err := s.loadTripwireConfig(s.cfg); err != nil {
		return err
	}
	return nil
}

// loadTripwireConfig reads $ECTO_DATA_DIR/tripwire.json for the server's
// workspace.
func (s *Server) loadTripwireConfig(cfg *config.Config) (*tripwire.Config, error) {
	path := filepath.Join(cfg.DataDir, tripwireFile)
	tc, err := tripwire.LoadConfig(path, tripwire.LoadOptions{
		Workspace: s.opts.Workspace, EnvDomains: cfg.Agent.AllowedDomains, EnvDomainsSet: cfg.Agent.AllowedDomainsSet,
		Warn: func(msg string) { s.log.Debug("tripwire", "note", msg) },
	})
	if err != nil {
		return nil, fmt.Errorf("server: %s cannot be used: %w", path, err)
	}
	return tc, nil
}

// tripwireFile is the tripwire configuration's name in the data dir.
const tripwireFile = "tripwire.json"
