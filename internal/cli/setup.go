package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/config"
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
