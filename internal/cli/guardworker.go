package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/sandbox/native"
)

// guardWorkerCommand is `ironvise guard-worker`, the guard process that
// IronVise starts for each session (docs/design/checks.md#guard-protocol,
// docs/design/agent.md#guard-worker). It is hidden: it speaks a binary
// protocol on stdin/stdout and refuses to run without the key its host hands
// it.
func (a *app) guardWorkerCommand() *cobra.Command {
	return &cobra.Command{
		Use:    guard.WorkerArg,
		Short:  "The guard process (started by IronVise itself; not for humans)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.runGuardWorker()
		},
	}
}

func (a *app) runGuardWorker() error {
	// The worker reads only its own process environment, which the host
	// built; never a .env file.
	look, err := config.OSLookup("")
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	// The key comes first and leaves the environment at once, before any
	// other code runs that could hand the environment on.
	key, err := takeGuardKey(look)
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	log := slog.New(slog.NewTextHandler(a.stderr, nil))
	cfg, err := config.Load(look)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker configuration:\n%w", err))
	}
	client, err := llm.NewGuard(cfg.Guard, cfg.LLM, llm.Options{Logger: log, BuiltinScript: builtinMockScript()})
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	// Everything that needs the file system is done (the configuration
	// and the mock script are read; DNS configuration, TLS roots and
	// zoneinfo are read lazily and stay readable); from here on the worker
	// runs confined.
	if err := confineWorker(log); err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	_, keyVisible := look(guard.KeyEnv)
	log.Info("guard worker ready", "backend", client.Backend(), "model", client.Model(), "key_env_cleared", !keyVisible)
	return guard.Serve(a.ctx, a.stdin, a.stdout, guard.WorkerOptions{
		Key:        key,
		Client:     client,
		LLMTimeout: guard.LLMTimeout(time.Duration(cfg.Guard.TimeoutSecs) * time.Second),
		Logger:     log,
	})
}

// takeGuardKey reads GUARD_HMAC_KEY and unsets it whatever its value, so the
// key is not inherited by anything this process might start and is not in
// its Go environment any more. (/proc/self/environ still shows the initial
// block, readable only by this user; confinement covers that.)
func takeGuardKey(look config.Lookup) ([]byte, error) {
	v, ok := look(guard.KeyEnv)
	if err := os.Unsetenv(guard.KeyEnv); err != nil {
		return nil, fmt.Errorf("guard worker: unset %s: %w", guard.KeyEnv, err)
	}
	if !ok {
		return nil, errors.New("guard worker: " + guard.KeyEnv + " is not set: this command is started by IronVise for each session, not by hand")
	}
	key, err := hex.DecodeString(v)
	if err != nil || len(key) != guard.KeyBytes {
		return nil, fmt.Errorf("guard worker: %s is not %d hex-encoded bytes", guard.KeyEnv, guard.KeyBytes)
	}
	return key, nil
}

// confineWorker applies the worker's own OS confinement before it serves
// (docs/design/agent.md#guard-worker): a seccomp allowlist suited to an HTTPS
// client (no exec, no ptrace) and Landlock with no file-system write access,
// on every thread. On Linux a failure stops the worker, so the host denies
// with guard_unavailable rather than consult an unconfined guard. On macOS
// and Windows IronVise has no self-confinement (sandbox/native); the guard
// must still work there, so the worker asks for best effort and logs a
// warning that it runs unconfined.
func confineWorker(log *slog.Logger) error {
	c, err := native.ConfineSelf(native.HTTPSClient().BestEffort())
	if err != nil {
		return err
	}
	if !c.Confined() {
		log.Warn("guard worker runs unconfined", "reason", c.Unconfined)
		return nil
	}
	log.Info("guard worker confined", "profile", c.Profile, "landlock_abi", c.LandlockABI,
		"seccomp_sha256", c.SeccompSHA256, "no_new_privs", c.NoNewPrivs, "read_paths", len(c.ReadPaths))
	return nil
}

// builtinMockScript is the built-in demo script the mock backend replays
// when MOCK_LLM_SCRIPT is not set (docs/design/agent.md#llm-backends); its
// guard lines are the mock guard's replies.
func builtinMockScript() []byte { return demo.Script() }
