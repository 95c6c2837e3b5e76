package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// resolveWorkspace makes dir (default: the working directory) absolute and
// symlink-resolved, once, as checks.md defines the workspace.
func resolveWorkspace(dir string) (string, error) {
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", exitCode(ExitUsage, fmt.Errorf("workspace: cannot read the working directory: %w", err))
		}
		dir = wd
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", exitCode(ExitUsage, fmt.Errorf("workspace %s: %w", dir, err))
	}
	res, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", exitCode(ExitUsage, fmt.Errorf("workspace %s does not exist or cannot be resolved: %w (pass --workspace DIR)", dir, err))
	}
	st, err := os.Stat(res)
	if err != nil || !st.IsDir() {
		return "", exitCode(ExitUsage, fmt.Errorf("workspace %s is not a directory (pass --workspace DIR)", res))
	}
	return res, nil
}

// loadTripwire reads $ECTO_DATA_DIR/tripwire.json for a workspace. Errors
// are configuration errors (exit 2) listing every problem.
func (a *app) loadTripwire(cfg *config.Config, ws string) (*tripwire.Tripwire, error) {
	path := filepath.Join(cfg.DataDir, "tripwire.json")
	tc, err := tripwire.LoadConfig(path, tripwire.LoadOptions{
		Workspace:     ws,
		EnvDomains:    cfg.Agent.AllowedDomains,
		EnvDomainsSet: cfg.Agent.AllowedDomainsSet,
		Warn:          func(msg string) { fmt.Fprintf(a.stderr, "ironvise: warning: %s\n", msg) },
	})
	if err != nil {
		var ce *tripwire.ConfigError
		if errors.As(err, &ce) {
			return nil, exitCode(ExitUsage, fmt.Errorf("invalid %s:\n%w", path, err))
		}
		return nil, exitCode(ExitUsage, err)
	}
	return tripwire.New(tc, tripwire.Options{Workspace: ws}), nil
}

// rules is what every command that checks intents loads first: the
// configuration, the workspace, its tripwire and the policy.
type rules struct {
	cfg *config.Config
	ws  string
	tw  *tripwire.Tripwire
	pol *policy.Policy
	// polHash is nil when no policy is loaded.
	polHash *string
}

// loadRules loads the rules of one command run; every failure is a
// configuration error (exit 2) naming what to fix.
func (a *app) loadRules(wsFlag, policyRef, policyPin string) (*rules, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	ws, err := resolveWorkspace(wsFlag)
	if err != nil {
		return nil, err
	}
	tw, err := a.loadTripwire(cfg, ws)
	if err != nil {
		return nil, err
	}
	pol, hash, err := a.loadPolicy(cfg, policyRef, policyPin)
	if err != nil {
		return nil, err
	}
	return &rules{cfg: cfg, ws: ws, tw: tw, pol: pol, polHash: hash}, nil
}
