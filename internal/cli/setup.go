package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// resolveWorkspace makes dir (default: the working directory) absolute and
// symlink-resolved, once, as docs/design/checks.md defines the workspace, and
// refuses the file-system root and the system directories (/etc, /usr, …, and
// their real locations such as /usr/bin for /bin). The caller refuses a
// workspace inside a protected path once the list is known
// (checkWorkspace).
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
	// Security: the default workspace is the working directory, so a run
	// from / would show every file of the host to the command.
	if err := checkWorkspace(res, secretpaths.List{}); err != nil {
		return "", err
	}
	return res, nil
}

// loadTripwireConfig reads $ECTO_DATA_DIR/tripwire.json for a workspace
// ("" when there is none: no default allowed root). Errors are
// configuration errors (exit 2) listing every problem.
func (a *app) loadTripwireConfig(cfg *config.Config, ws string) (*tripwire.Config, error) {
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
	return tc, nil
}

// egressRules is the allow list of proxy mode, by which the tripwire
// judges the destinations a command names as the egress proxy does
// (docs/checks.md#commands-in-proxy-mode); nil in mode none. A session
// whose policy narrows the list gives the tripwire its own rules with
// Tripwire.WithEgress.
func egressRules(cfg *config.Config) tripwire.EgressRules {
	n := cfg.Sandbox.Network
	if !n.Proxy() {
		return nil
	}
	return egress.NewRules(n.AllowedDomains, n.AllowCIDRs)
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
	p, err := a.loadProtection(wsFlag)
	if err != nil {
		return nil, err
	}
	return a.rulesOf(p, policyRef, policyPin)
}

// protected is the first part of a command's rules: the configuration,
// the workspace, its tripwire configuration and the protected paths —
// all a sandbox tier needs to start (a standalone exec starts its tier
// there, so that its first launcher gets going before the rest loads).
type protected struct {
	cfg  *config.Config
	ws   string
	tc   *tripwire.Config
	list secretpaths.List
}

// loadProtection loads the first part of a command's rules (protected).
func (a *app) loadProtection(wsFlag string) (*protected, error) {
	cfg, err := a.config()
	if err != nil {
		return nil, err
	}
	ws, err := resolveWorkspace(wsFlag)
	if err != nil {
		return nil, err
	}
	tc, err := a.loadTripwireConfig(cfg, ws)
	if err != nil {
		return nil, err
	}
	list, err := a.protection(cfg, tc.ProtectedPaths)
	if err != nil {
		return nil, err
	}
	return &protected{cfg: cfg, ws: ws, tc: tc, list: list}, nil
}

// rulesOf is the rest of the rules: the workspace refused inside a
// protected path, the tripwire with the run's protected paths, the policy.
// (loadProtection's resolveWorkspace refused a system directory: that
// check resolves every system directory's symlinks, 0.16 ms a time on the
// development host, and is not run twice.)
func (a *app) rulesOf(p *protected, policyRef, policyPin string) (*rules, error) {
	if err := secretpaths.CheckNotInside(p.ws, p.list); err != nil {
		return nil, exitCode(ExitUsage, err)
	}
	tw := tripwire.New(p.tc, tripwire.Options{Workspace: p.ws, Protected: p.list, Egress: egressRules(p.cfg)})
	pol, hash, err := a.loadPolicy(p.cfg, policyRef, policyPin)
	if err != nil {
		return nil, err
	}
	return &rules{cfg: p.cfg, ws: p.ws, tw: tw, pol: pol, polHash: hash}, nil
}
