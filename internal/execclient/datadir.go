package execclient

import (
	"errors"
	"io/fs"
	"os"
	"path"
)

// The full command line loads the whole configuration (internal/config)
// before it uses the daemon: an invalid variable is exec's usage error
// there, even though the daemon runs with its own configuration. Rather
// than validate every variable again, the thin path leaves the command
// line to the full one when any variable that could be invalid is set.
// internal/config's reads are held to these lists by this package's tests:
// every variable config.Load reads is in exactly one of them.
var (
	// dataDirVars decide the data directory; DataDir reads them as
	// config does.
	dataDirVars = []string{"ECTO_DATA_DIR", "XDG_DATA_HOME", "HOME"}
	// hostVars locate the user's credential stores; config takes any
	// value of them, and they do not touch the data directory.
	hostVars = []string{
		"USERPROFILE", "XDG_CONFIG_HOME", "APPDATA", "LOCALAPPDATA", "KUBECONFIG", "DOCKER_CONFIG",
		"AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE", "GNUPGHOME", "CLOUDSDK_CONFIG", "AZURE_CONFIG_DIR",
		"PASSWORD_STORE_DIR", "NETRC", "NPM_CONFIG_USERCONFIG", "GH_CONFIG_DIR",
	}
	// checkedVars are the rest: set at all, even empty, they leave the
	// command line to the full one.
	checkedVars = []string{
		"SCANNER_SENSITIVITY", "AGENT_MAX_STEPS", "AGENT_SNAPSHOT_INTERVAL", "AGENT_LLM_ERROR_LIMIT",
		"AGENT_GUARD_DENIAL_LIMIT", "AGENT_JUSTIFICATION_FAILURE_LIMIT", "AGENT_CHECK_DENIAL_LIMIT",
		"AGENT_TOKEN_BUDGET_MAX", "AGENT_KEY_ROTATION_STEPS", "AGENT_ALLOWED_DOMAINS", "GUARD_REQUIRED",
		"GUARD_LLM_BACKEND", "GUARD_LLM_MODEL", "GUARD_TIMEOUT_SECS", "GUARD_MOCK_REPLY", "GUARD_ENCLAVE", "ECTO_ENCLAVE_REMOTE_URL", "LLM_BACKEND",
		"OLLAMA_BASE_URL", "OLLAMA_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL",
		"ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL", "MOCK_LLM_SCRIPT", "LLM_TIMEOUT_SECS",
		"ECTO_SANDBOX_PERMISSIVE", "ECTO_SANDBOX_TIER", "ECTO_SANDBOX_TIMEOUT_SECS", "ECTO_SANDBOX_CPU_SECS",
		"ECTO_SANDBOX_MEM_MIB", "ECTO_SANDBOX_NOFILE", "ECTO_SANDBOX_SCRATCH_MIB", "ECTO_SANDBOX_USER", "ECTO_SANDBOX_CONTAINER_MODE",
		"ECTO_SANDBOX_NETWORK", "ECTO_SANDBOX_ALLOWED_DOMAINS", "ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", "ECTO_SANDBOX_WORKSPACE",
		"ECTO_DOCKER_IMAGE", "ECTO_FC_BINARY", "ECTO_DOCKER_RUNTIME", "ECTO_DOCKER_MEMORY", "ECTO_DOCKER_CPUS",
		"ECTO_DOCKER_TIMEOUT", "ECTO_DOCKER_EXTRA_ARGS", "ECTO_FC_KERNEL", "ECTO_FC_ROOTFS", "ECTO_FC_VCPUS",
		"ECTO_FC_MEM_MIB", "ECTO_FC_TIMEOUT_SECS", "DATABASE_URL", "DATABASE_POOL_SIZE",
		"ECTO_CHECKPOINT_EVENTS", "ECTO_CHECKPOINT_SECS", "ECTO_KEY_PASSPHRASE", "ECTO_ISSUER_KEY_FILE",
		"ECTO_BIND_HOST", "ECTO_BIND_PORT", "OBSERVER_TOKEN", "ECTOLEDGER_AUDITOR_TOKEN",
		"ECTOLEDGER_AGENT_TOKEN", "API_RATE_LIMIT_PER_SECOND", "API_RATE_LIMIT_BURST",
		"SESSION_RATE_LIMIT_PER_SECOND", "SESSION_RATE_LIMIT_BURST", "SSE_RATE_LIMIT_PER_SECOND",
		"SSE_RATE_LIMIT_BURST", "SSE_KEEPALIVE_SECS", "ECTO_MAX_CONNECTIONS", "ECTO_MAX_CONNECTIONS_PER_IP",
		"ECTO_IDLE_TIMEOUT_SECS", "ECTO_BODY_TIMEOUT_SECS", "ECTO_MAX_IDLE_SESSIONS",
		"ECTO_MAX_IDLE_SESSIONS_PER_TOKEN", "ECTO_SESSION_IDLE_SECS", "ECTO_TRUSTED_PROXIES",
		"ECTO_CORS_ORIGINS", "ECTO_DEMO_MODE", "EVM_RPC_URL", "EVM_CONTRACT_ADDRESS", "WEBHOOK_INCLUDE_GUARD",
		"WEBHOOK_INCLUDE_TRIPWIRE", "SIEM_FORMAT", "WEBHOOK_ALLOW_PRIVATE_TARGETS",
		"WEBHOOK_RATE_LIMIT_PER_SECOND", "WEBHOOK_BEARER_TOKEN", "WEBHOOK_HMAC_SECRET", "WEBHOOK_URL",
		"ECTO_ENCLAVE_PCR0", "ECTO_ENCLAVE_PCR1", "ECTO_ENCLAVE_PCR2", "ECTO_ENCLAVE_PCR3", "ECTO_ENCLAVE_PCR4",
		"ECTO_ENCLAVE_PCR5", "ECTO_ENCLAVE_PCR6", "ECTO_ENCLAVE_PCR7", "ECTO_ENCLAVE_PCR8", "ECTO_ENCLAVE_PCR9",
		"ECTO_ENCLAVE_PCR10", "ECTO_ENCLAVE_PCR11", "ECTO_ENCLAVE_PCR12", "ECTO_ENCLAVE_PCR13", "ECTO_ENCLAVE_PCR14",
		"ECTO_ENCLAVE_PCR15", "ECTO_ENCLAVE_PCR16", "ECTO_ENCLAVE_PCR17", "ECTO_ENCLAVE_PCR18", "ECTO_ENCLAVE_PCR19",
		"ECTO_ENCLAVE_PCR20", "ECTO_ENCLAVE_PCR21", "ECTO_ENCLAVE_PCR22", "ECTO_ENCLAVE_PCR23", "ECTO_ENCLAVE_PCR24",
		"ECTO_ENCLAVE_PCR25", "ECTO_ENCLAVE_PCR26", "ECTO_ENCLAVE_PCR27", "ECTO_ENCLAVE_PCR28", "ECTO_ENCLAVE_PCR29",
		"ECTO_ENCLAVE_PCR30", "ECTO_ENCLAVE_PCR31",
	}
)

// dotEnv is the file the full command line reads variables from, in its
// working directory (docs/design/cli.md#conventions).
const dotEnv = ".env"

// DataDir is the data directory the full command line would use, read
// from look (the process environment) as internal/config reads it; ok is
// false when the thin path cannot be sure: a .env file exists (stat is
// asked about it), a variable of checkedVars is set, or a data directory
// variable is in a form config would reject or trim.
func DataDir(look func(string) (string, bool), stat func(string) (os.FileInfo, error)) (dir string, ok bool) {
	if _, err := stat(dotEnv); !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	for _, name := range checkedVars {
		if _, set := look(name); set {
			return "", false
		}
	}
	// config.Load: ECTO_DATA_DIR if set, else $XDG_DATA_HOME/ironvise,
	// else $HOME/.local/share/ironvise; a relative value of the first two
	// is an error.
	if d, set, ok := plainVar(look, "ECTO_DATA_DIR"); !ok || set {
		return absClean(d, ok)
	}
	if x, set, ok := plainVar(look, "XDG_DATA_HOME"); !ok || set {
		return joinIf(absClean(x, ok))("ironvise")
	}
	// A relative or missing HOME is one config would take or fail on in
	// ways not worth copying: the full command line handles it.
	home, set, ok := plainVar(look, "HOME")
	return joinIf(absClean(home, ok && set))(".local", "share", "ironvise")
}

// joinIf joins elems to dir when ok.
func joinIf(dir string, ok bool) func(elems ...string) (string, bool) {
	return func(elems ...string) (string, bool) {
		if !ok {
			return "", false
		}
		return path.Join(append([]string{dir}, elems...)...), true
	}
}

// plainVar reads a variable config reads with its whitespace trimmed: set
// is false when it is unset or empty; ok is false when its value begins or
// ends with a byte that trimming might remove (a space or control byte, or
// any non-ASCII byte), which the thin path leaves to config.
func plainVar(look func(string) (string, bool), name string) (v string, set, ok bool) {
	v, _ = look(name)
	if v == "" {
		return "", false, true
	}
	edge := func(c byte) bool { return c <= ' ' || c >= 0x80 }
	if edge(v[0]) || edge(v[len(v)-1]) {
		return "", false, false
	}
	return v, true, true
}

// absClean is v cleaned when it is absolute; anything else is left to the
// full command line (config rejects a relative data directory).
func absClean(v string, ok bool) (string, bool) {
	if !ok || !path.IsAbs(v) {
		return "", false
	}
	return path.Clean(v), true
}
