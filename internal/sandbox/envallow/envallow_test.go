package envallow

import "testing"

func TestAllowed(t *testing.T) {
	for name, want := range map[string]bool{
		"LANG": true, "LANGUAGE": true, "TZ": true, "TERM": true, "NO_COLOR": true, "COLUMNS": true, "LINES": true,
		"LC_ALL": true, "LC_CTYPE": true,
		"LC_": false, "LC_all": false, "LC_X-Y": false, "lang": false, "PATH": false, "HOME": false,
		"LD_PRELOAD": false, "OPENAI_API_KEY": false, "DATABASE_URL": false, "SSH_AUTH_SOCK": false, "": false,
	} {
		if got := Allowed(name); got != want {
			t.Errorf("Allowed(%q) = %v; want %v", name, got, want)
		}
	}
}

func TestSecret(t *testing.T) {
	for name, want := range map[string]bool{
		// IronVise's own settings.
		"ECTO_KEY_PASSPHRASE": true, "DATABASE_URL": true, "OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true,
		"OBSERVER_TOKEN": true, "ECTOLEDGER_AGENT_TOKEN": true, "WEBHOOK_HMAC_SECRET": true, "GUARD_HMAC_KEY": true,
		"EVM_RPC_URL": true, "ECTO_DATA_DIR": true, "ecto_key_passphrase": true,
		// The usual credential names.
		"AWS_SECRET_ACCESS_KEY": true, "AWS_ACCESS_KEY_ID": true, "AWS_SESSION_TOKEN": true, "GITHUB_TOKEN": true,
		"NPM_TOKEN": true, "MY_API_KEY": true, "STRIPE_KEY": true, "DBPASSWORD": true, "PGPASSWORD": true,
		"MYSQL_PWD_PASSWD": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "AZURE_CLIENT_SECRET": true,
		"SENTRY_DSN": true, "APP_DATABASE_URL": true, "REDIS_DB_URL": true, "HF_APIKEY": true, "KEY": true,
		"BASIC_AUTH": true, "SESSION_COOKIE": true, "SQL_CONNECTION_STRING": true, "GPG_PASSPHRASE": true,
		// Ordinary settings.
		"LANG": false, "TZ": false, "GIT_AUTHOR_NAME": false, "TOKENIZERS_PARALLELISM": false, "KEYBOARD": false,
		"PATH": false, "GOFLAGS": false, "NODE_ENV": false, "PYTHONUNBUFFERED": false, "CI": false, "MONKEY": false,
	} {
		if got := Secret(name); got != want {
			t.Errorf("Secret(%q) = %v; want %v", name, got, want)
		}
	}
}
