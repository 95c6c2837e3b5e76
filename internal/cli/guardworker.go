package cli

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/demo"
	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/remote"
	"github.com/ironvise/ironvise/internal/enclave/software"
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
	if fd, ok := look(guard.SecretsFDEnv); ok {
		return a.runHardenedGuardWorker(look, fd)
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

// runHardenedGuardWorker is the worker in the software enclave (Level 1,
// docs/enclaves.md; the protocol is internal/guard's): it hardens itself
// before anything secret reaches its memory, reads its key from the secrets
// pipe into locked memory, builds its model client, confines itself (not
// best effort: a worker that cannot be confined exits), measures itself
// and sends the measurement as its first line. Every step that fails ends
// the worker with the reason, which the host reports; nothing is skipped.
func (a *app) runHardenedGuardWorker(look config.Lookup, fd string) error {
	// Security: a key in the environment as well means this worker was not
	// set up by a software-enclave host; refuse rather than pick one.
	if _, ok := look(guard.KeyEnv); ok {
		_ = os.Unsetenv(guard.KeyEnv)
		return exitCode(ExitUsage, errors.New("guard worker: both "+guard.KeyEnv+" and "+guard.SecretsFDEnv+" are set: the software enclave hands the key over the pipe only"))
	}
	if fd != strconv.Itoa(guard.SecretsFD) {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %s=%q, want %d", guard.SecretsFDEnv, fd, guard.SecretsFD))
	}
	_ = os.Unsetenv(guard.SecretsFDEnv)
	log := slog.New(slog.NewTextHandler(a.stderr, nil))
	// Hardening comes first, so the secrets, the configuration (with the
	// model API key) and everything built from them are in locked,
	// non-dumpable memory from the first byte.
	hard, err := software.Harden()
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	pipe := os.NewFile(uintptr(guard.SecretsFD), "guard-secrets")
	secrets, err := guard.ReadWorkerSecrets(pipe)
	_ = pipe.Close()
	if err != nil {
		return exitCode(ExitUsage, err)
	}
	defer secrets.Close()
	// Hashed before confinement, which leaves the binary unreadable.
	exeSHA, err := software.FileSHA256(software.SelfExecutable)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	cfg, err := config.Load(look)
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker configuration:\n%w", err))
	}
	var client llm.Client
	if secrets.RemoteChannel != nil {
		// Level 3: the model runs in the remote enclave the host attested;
		// the worker only holds the channel keyed from that exchange.
		var ch *remote.Channel
		if ch, err = remote.ImportChannel(secrets.RemoteChannel); err == nil {
			client = remote.NewClient(ch, nil)
		}
	} else {
		client, err = llm.NewGuard(cfg.Guard, cfg.LLM, llm.Options{Logger: log, BuiltinScript: builtinMockScript()})
	}
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	// Security: in the software enclave confinement is mandatory, on every
	// OS: the host refuses a measurement without it anyway, and this way
	// the reason is the kernel's.
	c, err := native.ConfineSelf(native.HTTPSClient())
	if err != nil {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: %w", err))
	}
	if !c.Confined() {
		return exitCode(ExitUsage, fmt.Errorf("guard worker: confinement not in force: %w", c.Unconfined))
	}
	m := enclave.Measurement{
		WorkerSHA256: exeSHA, Profile: c.Profile, LandlockABI: c.LandlockABI, SeccompSHA256: c.SeccompSHA256, NoNewPrivs: c.NoNewPrivs,
		MemoryLocked: hard.MemoryLocked, Dumpable: hard.Dumpable, CoreLimit: hard.CoreLimit, SecretsOverPipe: true,
	}
	log.Info("guard worker ready", "backend", client.Backend(), "model", client.Model(), "enclave", string(secrets.Enclave),
		"worker_sha256", m.WorkerSHA256, "landlock_abi", m.LandlockABI, "seccomp_sha256", m.SeccompSHA256)
	return guard.Serve(a.ctx, a.stdin, a.stdout, guard.WorkerOptions{
		Key:        secrets.Key.Bytes(),
		Client:     client,
		LLMTimeout: guard.LLMTimeout(time.Duration(cfg.Guard.TimeoutSecs) * time.Second),
		Logger:     log,
		Hello:      &m,
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
