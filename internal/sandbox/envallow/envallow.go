// Package envallow is the environment policy of IronVise's sandboxes: the
// few variables a command may inherit from the caller, and the names
// IronVise treats as secret wherever a variable is set for a command.
//
// It is a leaf (standard library only) so that both the host
// (package sandbox, the container tier) and the microVM guest init
// (cmd/ironvise-guest, which must stay small) apply the same lists.
//
// # Usage
//
//	envallow.Allowed("LANG")            // true: may pass from the caller
//	envallow.Allowed("OPENAI_API_KEY")  // false
//	envallow.Secret("GITHUB_TOKEN")     // true: never set for a command
//
// # Limitations
//
// Secret recognises names, not values: a secret in a variable called
// GREETING is not found (the container tier also refuses a URL value that
// carries a password). Allowed is an allowlist, so it needs no such
// guessing: nothing outside it passes from the caller.
package envallow

import (
	"slices"
	"strings"
)

// allowlist names the variables a command may inherit from the caller.
// Everything else is dropped: API keys, tokens, DATABASE_URL, SSH_AUTH_SOCK,
// LD_PRELOAD and the like must never reach an agent's command.
var allowlist = []string{
	"LANG", "LANGUAGE", "TZ", "TERM", "NO_COLOR", "COLUMNS", "LINES",
}

// Allowed reports whether the variable name may pass into a sandbox: one
// of the allowlist or a locale category (LC_*).
func Allowed(name string) bool {
	if strings.HasPrefix(name, "LC_") && len(name) > 3 && isUpperName(name) {
		return true
	}
	return slices.Contains(allowlist, name)
}

func isUpperName(s string) bool {
	for _, c := range s {
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// ironviseSecrets are IronVise's own secret settings (internal/config):
// the key passphrase, the model API keys, the server's bootstrap tokens,
// the webhook credentials, the guard's HMAC key and the ledger URL, which
// may carry a database password.
var ironviseSecrets = []string{
	"ECTO_KEY_PASSPHRASE", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OBSERVER_TOKEN",
	"ECTOLEDGER_AUDITOR_TOKEN", "ECTOLEDGER_AGENT_TOKEN", "WEBHOOK_BEARER_TOKEN",
	"WEBHOOK_HMAC_SECRET", "GUARD_HMAC_KEY", "DATABASE_URL", "EVM_RPC_URL",
}

// ironvisePrefixes are IronVise's own configuration: none of it is a
// command's business.
var ironvisePrefixes = []string{"ECTO_", "ECTOLEDGER_", "GUARD_", "WEBHOOK_", "OBSERVER_", "EVM_"}

// secretParts are substrings that mark a credential wherever they occur
// (DBPASSWORD, AZURE_CLIENT_SECRET, GOOGLE_APPLICATION_CREDENTIALS).
var secretParts = []string{"PASSWORD", "PASSWD", "PASSPHRASE", "SECRET", "CREDENTIAL", "APIKEY", "PRIVATEKEY", "CONNECTION_STRING"}

// secretWords mark a credential as a whole underscore-separated word of
// the name (MY_API_KEY, GITHUB_TOKEN, NPM_AUTH, SENTRY_DSN), so that
// GIT_AUTHOR_NAME or TOKENIZERS_PARALLELISM are not taken for one.
var secretWords = []string{"KEY", "KEYS", "TOKEN", "TOKENS", "AUTH", "AUTHORIZATION", "PASS", "CREDS", "DSN", "COOKIE", "COOKIES", "SESSION"}

// Secret reports whether name (in any case) is one IronVise treats as
// secret: one of its own secret settings or configuration prefixes, a name
// containing PASSWORD, PASSWD, PASSPHRASE, SECRET, CREDENTIAL, APIKEY,
// PRIVATEKEY or CONNECTION_STRING, a name with KEY(S), TOKEN(S), AUTH,
// AUTHORIZATION, PASS, CREDS, DSN, COOKIE(S) or SESSION as a word (*_KEY,
// *_TOKEN, …), or one ending in DATABASE_URL or DB_URL.
func Secret(name string) bool {
	n := strings.ToUpper(name)
	if slices.Contains(ironviseSecrets, n) || strings.HasSuffix(n, "DATABASE_URL") || strings.HasSuffix(n, "DB_URL") {
		return true
	}
	for _, p := range ironvisePrefixes {
		if strings.HasPrefix(n, p) {
			return true
		}
	}
	for _, p := range secretParts {
		if strings.Contains(n, p) {
			return true
		}
	}
	for _, w := range strings.Split(n, "_") {
		if slices.Contains(secretWords, w) {
			return true
		}
	}
	return false
}
