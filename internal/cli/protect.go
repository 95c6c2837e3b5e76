package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/sandbox/mounts"
	"github.com/ironvise/ironvise/internal/secretpaths"
)

// protection returns the run's protected-path list: computed once, from the
// configuration and the operator's tripwire.json entries, and then handed
// to both the tripwire and the sandbox tier, so that what one refuses the
// other hides.
func (a *app) protection(cfg *config.Config, extra []secretpaths.Entry) (secretpaths.List, error) {
	if a.protect != nil {
		return *a.protect, nil
	}
	src, err := protectionSources(cfg)
	if err != nil {
		return secretpaths.List{}, exitCode(ExitUsage, err)
	}
	src.Extra = extra
	list, err := secretpaths.Compute(src)
	if err != nil {
		return secretpaths.List{}, exitCode(ExitUsage, fmt.Errorf("cannot list the paths to hide from commands: %w", err))
	}
	// Security: a mount can give a protected path another name (a bind
	// mount of a home directory inside the workspace); the tripwire,
	// read_file and the hooks refuse those names too (package
	// sandbox/mounts). Read with the list: the native and container tiers
	// read the mount table again for every command's masks.
	aliases, err := mounts.Aliases(list.Paths)
	if err != nil {
		return secretpaths.List{}, exitCode(ExitUsage, fmt.Errorf("cannot read the mount table for other names of the paths to hide from commands: %w", err))
	}
	list = list.With(aliases)
	a.protect = &list
	return list, nil
}

// tierProtection is the list for a command that selects a sandbox tier
// without loading the rules first (sandbox doctor): the operator's entries
// are read from tripwire.json here.
func (a *app) tierProtection(cfg *config.Config) (secretpaths.List, error) {
	if a.protect != nil {
		return *a.protect, nil
	}
	tc, err := a.loadTripwireConfig(cfg, "")
	if err != nil {
		return secretpaths.List{}, err
	}
	return a.protection(cfg, tc.ProtectedPaths)
}

// protectionSources collects what the configuration says about where
// IronVise's own files and the user's credential stores are.
func protectionSources(cfg *config.Config) (secretpaths.Sources, error) {
	h := cfg.Host
	src := secretpaths.Sources{
		DataDir: cfg.DataDir, Home: h.Home, ConfigHome: h.ConfigHome, DataHome: h.DataHome,
		AppData: h.AppData, LocalAppData: h.LocalAppData,
	}
	add := func(name, p string) {
		if p == "" {
			return
		}
		if a, err := filepath.Abs(p); err == nil {
			p = a
		}
		src.Named = append(src.Named, secretpaths.Source{Name: name, Path: p})
	}
	// The ledger may live outside the data directory (DATABASE_URL=
	// sqlite:PATH); SQLite keeps committed pages in its -wal and -shm
	// companions and rolls back from -journal, so they are as secret.
	t, err := ledgerdb.Parse(cfg.Ledger.DatabaseURL, cfg.DataDir)
	if err != nil {
		return src, err
	}
	if t.Kind == ledgerdb.KindSQLite {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			add("DATABASE_URL", t.Path+suffix)
		}
	}
	// The mock script decides the guard's replies: a command that reads
	// it knows what the guard will allow.
	add("MOCK_LLM_SCRIPT", cfg.LLM.MockScript)
	// The .env that Run loads from the working directory holds API keys
	// and tokens.
	if wd, err := os.Getwd(); err == nil {
		env := filepath.Join(wd, ".env")
		if _, err := os.Lstat(env); err == nil {
			add(".env", env)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return src, fmt.Errorf("examine %s: %w (make it readable or remove it)", env, err)
		}
	}
	for _, s := range h.Stores {
		add(s.Var, s.Path)
	}
	return src, nil
}

// checkWorkspace refuses a workspace that is a system directory or lies
// inside a protected path (secretpaths.CheckWorkspace), as a usage error.
func checkWorkspace(ws string, list secretpaths.List) error {
	if err := secretpaths.CheckWorkspace(ws, list); err != nil {
		return exitCode(ExitUsage, err)
	}
	return nil
}
