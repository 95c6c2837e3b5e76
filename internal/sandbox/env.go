package sandbox

import (
	"slices"
	"strings"
)

// envAllowlist names the variables a command may inherit from the caller.
// Everything else is dropped: API keys, tokens, DATABASE_URL, SSH_AUTH_SOCK,
// LD_PRELOAD and the like must never reach an agent's command.
var envAllowlist = []string{
	"LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "COLUMNS", "LINES",
}

// EnvAllowed reports whether the variable name may pass into a sandbox:
// one of the allowlist or a locale category (LC_*).
func EnvAllowed(name string) bool {
	if strings.HasPrefix(name, "LC_") && len(name) > 3 && isEnvName(name) {
		return true
	}
	return slices.Contains(envAllowlist, name)
}

func isEnvName(s string) bool {
	for _, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// DefaultPath is the PATH of a sandboxed command.
const DefaultPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

// CommandEnv builds the environment of a sandboxed command: the allowlisted
// variables of candidate (the first occurrence wins), then the values the
// tier sets itself (they override the candidate), sorted for a stable
// record. A LANG default of C.UTF-8 keeps tools printing UTF-8.
func CommandEnv(candidate []string, set map[string]string) []string {
	seen := map[string]bool{}
	var out []string
	for _, kv := range candidate {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || seen[name] || !EnvAllowed(name) {
			continue
		}
		if _, override := set[name]; override {
			continue
		}
		seen[name] = true
		out = append(out, kv)
	}
	if _, ok := set["LANG"]; !ok && !seen["LANG"] {
		out = append(out, "LANG=C.UTF-8")
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}
