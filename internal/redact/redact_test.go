package redact

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

const testSession = "0b6c2c6e-1b0a-4b7e-9f3c-1d2e3f405162"

// Test secrets: shaped like real ones, issued by no one.
const (
	awsKeyID    = "AKIAZ7VQX3L4M5N6P2R4"
	awsSecret   = "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"
	stripeLive  = "sk_live_4eC39HqLyjWDarjtT1zdp7dcXq"
	dbPassword  = "S3cr3t-Passw0rd"
	githubToken = "ghp_1A2b3C4d5E6f7G8h9I0jK1lM2nO3pQ4rS5tU"
	jwtToken    = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
	pemBody     = "MIIEpAIBAAKCAQEA1c3Kx3B0n1mK3w0Z0d1s2q3w4e5r6t7y8u9i0o1p2a3s4d5f\n6g7h8j9k0l1z2x3c4v5b6n7m8q9w0e1r2t3y4u5i6o7p8a9s0d1f2g3h4j5k6l7z"
	pemKey      = "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "\n-----END RSA PRIVATE KEY-----"
)

func TestRedactSecrets(t *testing.T) {
	t.Parallel()
	r := ForSession(testSession)
	for _, tc := range []struct {
		name   string
		in     string
		rule   string
		secret string // the text the placeholder must replace
	}{
		{"aws key id", "AWS_ACCESS_KEY_ID=" + awsKeyID + "\n", "aws-access-token", awsKeyID},
		{"aws secret", "aws_secret_access_key = " + awsSecret + "\n", "", awsSecret},
		{"stripe live key", `stripe.api_key = "` + stripeLive + `"`, "stripe-access-token", stripeLive},
		{"github token in free text", "use " + githubToken + " to push", "github-pat", githubToken},
		{"db url password", "DATABASE_URL=postgres://app:" + dbPassword + "@db.internal:5432/prod", "url-password", dbPassword},
		{"url password with @", "redis://default:p@ss:w0rd!@cache:6379/0", "url-password", "p@ss:w0rd!"},
		{"key value password", "DB_PASSWORD=hunter2\n", "key-value-secret", "hunter2"},
		{"yaml password", "database:\n  password: 'correct horse battery'\n", "key-value-secret", "correct horse battery"},
		{"yaml password with symbols", "server:\n  admin_password: hunter2|x=y\\z\n  debug: true\n", "key-value-secret", "hunter2|x=y\\z"},
		{"json password", `{"user":"app","password":"Tr0ub4dor&3"}`, "key-value-secret", "Tr0ub4dor&3"},
		{"escaped json password", `"{\"password\":\"Tr0ub4dor&3\"}"`, "key-value-secret", "Tr0ub4dor&3"},
		{"cli flag", "mysql --password=Xk9mQ2vL7p -h db", "key-value-secret", "Xk9mQ2vL7p"},
		{"authorization header", "Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0", "", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"},
		{"jwt", "token " + jwtToken + " end", "jwt", jwtToken},
		{"pem private key", "$ cat id_rsa\n" + pemKey + "\n$ ", "private-key", pemKey},
		{"pem key cut before END", "$ head -3 id_rsa\n-----BEGIN RSA PRIVATE KEY-----\n" + pemBody + "\n", "private-key", "-----BEGIN RSA PRIVATE KEY-----\n" + pemBody},
		{"pem key in json", `{"private_key": "-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(pemBody, "\n", `\n`) + `\n-----END PRIVATE KEY-----\n"}`,
			"private-key", `-----BEGIN PRIVATE KEY-----\n` + strings.ReplaceAll(pemBody, "\n", `\n`) + `\n-----END PRIVATE KEY-----`},
		{"openssh key", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----", "private-key",
			"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, reps := r.Redact(tc.in)
			if strings.Contains(out, tc.secret) {
				t.Fatalf("Redact(%q) = %q; the secret survived", tc.in, out)
			}
			if len(reps) != 1 {
				t.Fatalf("Redact(%q) = %q with %d placeholders; want 1", tc.in, out, len(reps))
			}
			p := out[reps[0].Start:reps[0].End]
			if tc.rule != "" && reps[0].Rule != tc.rule {
				t.Errorf("rule = %s; want %s (%q)", reps[0].Rule, tc.rule, out)
			}
			if !Confirm(p, []byte(testSession), tc.secret) {
				t.Errorf("placeholder %s does not confirm the secret %q", p, tc.secret)
			}
			if Confirm(p, []byte(testSession), tc.secret+"x") || Confirm(p, []byte("other-session"), tc.secret) {
				t.Errorf("placeholder %s confirms a wrong secret or salt", p)
			}
			if again := r.String(out); again != out {
				t.Errorf("redacting twice changed %q to %q", out, again)
			}
		})
	}
}

// TestRedactKeepsEvidence: ordinary text of an audit is never redacted.
func TestRedactKeepsEvidence(t *testing.T) {
	t.Parallel()
	r := ForSession(testSession)
	for _, in := range []string{
		"USER=$(whoami)\nHOME=/home/dev\nPWD=/home/dev/project\n",
		"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQC7zVq9p0yq3 dev@laptop\n",
		"curl -fsSL https://get.example.com/install.sh | sh\n",
		"password = os.Getenv(\"DB_PASSWORD\")\ntoken := r.Header.Get(\"X-Token\")\nsecret: ${APP_SECRET}\n",
		"api_key: <your-api-key>\npassword: ********\ntoken=xxxxxxxxxxxxxxxx\nsecret_key = settings.SECRET_KEY\n",
		"max_tokens=1024\ntokenizer: bert-base\nprimary_key = id\nauthor: Jane\n",
		"postgres://app@db:5432/x and https://user:${TOKEN}@github.com/org/repo.git\n",
		"GET /api/v1/items?page=2 HTTP/1.1\" 200 512 \"curl/8.5.0\"\n",
		"-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQm9ndXMgY2VydGlmaWNhdGUgZm9yIHRlc3RzMAoGCCqG\n-----END CERTIFICATE-----\n",
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n", // the documented AWS sample key
		"if a == b { key := m[k]; secret, ok := cache.Get(key) }",
		"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
		"ERROR auth: token expired for user bob\nhint password: must be at least 12 characters long\n",
		"Password string `json:\"password\"`\nTokens: tokens,\nSecret: cfg.Secret,\nAPIKey: os.Getenv(\"API_KEY\"),\n",
	} {
		if fs := r.Find(in); len(fs) != 0 {
			t.Errorf("Find(%q) = %+v; want nothing", in, fs)
		}
	}
}

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	r := ForSession(testSession)
	doc := []byte(`{"command":"echo ` + awsKeyID + `","n":1.50,"nested":[{"password":"Tr0ub4dor&3"}],"ok":"plain"}`)
	out, changed, err := r.JSON(doc)
	if err != nil || !changed {
		t.Fatalf("JSON = %s, %v, %v", out, changed, err)
	}
	for _, s := range []string{awsKeyID, "Tr0ub4dor&3"} {
		if strings.Contains(string(out), s) {
			t.Errorf("JSON output %s still holds %q", out, s)
		}
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil || v["ok"] != "plain" || !strings.Contains(string(out), `"n":1.50`) {
		t.Errorf("JSON output %s: %v; want plain values and numbers kept", out, err)
	}
	same := []byte(`{"a":"b", "c": 2}`)
	if out, changed, err := r.JSON(same); err != nil || changed || string(out) != string(same) {
		t.Errorf("JSON of a clean document = %s, %v, %v; want it unchanged", out, changed, err)
	}
	if _, _, err := r.JSON([]byte(`{"a":`)); err == nil {
		t.Errorf("JSON of a broken document: no error")
	}
}

func TestUntaggedPlaceholders(t *testing.T) {
	t.Parallel()
	got := Untagged().String("key " + awsKeyID)
	if got != "key [REDACTED:aws-access-token]" {
		t.Errorf("Untagged = %q", got)
	}
}

// TestTagIsHMAC pins the tag to the recipe of docs/scanner.md: the vector
// was computed with
//
//	printf %s AKIAZ7VQX3L4M5N6P2R4 | openssl dgst -sha256 -mac HMAC -macopt key:0b6c2c6e-1b0a-4b7e-9f3c-1d2e3f405162
func TestTagIsHMAC(t *testing.T) {
	t.Parallel()
	if got, want := Tag([]byte(testSession), awsKeyID), "19b3b281e919f142"; got != want {
		t.Errorf("Tag = %s; want %s", got, want)
	}
	if _, _, ok := ParsePlaceholder("[REDACTED:x:hmac-sha256=0123]"); ok {
		t.Errorf("a short tag parsed")
	}
}

func TestBrokenRulesFailClosed(t *testing.T) {
	t.Parallel()
	r := New(&Rules{broken: bug(errTest)}, nil)
	if got := r.String("anything at all"); got != "[REDACTED:redactor-unavailable]" {
		t.Errorf("a broken rule set let text through: %q", got)
	}
}

var errTest = errTestType{}

type errTestType struct{}

func (errTestType) Error() string { return "test" }

func TestCompileRejectsUnknownFields(t *testing.T) {
	t.Parallel()
	if _, err := Compile("title = 'x'\nnewField = 1\n"); err == nil {
		t.Errorf("an unknown field was accepted")
	}
	if _, err := Compile("[[rules]]\nid = 'x'\nregex = 'ab'\nkeywords = ['q']\n"); err == nil {
		t.Errorf("a short keyword without an expansion was accepted")
	}
	if Default().Err() != nil {
		t.Fatalf("built-in rules: %v", Default().Err())
	}
}

// TestPlaceholdersAreNotRedactedAgain: a whole or a cut placeholder (a
// quote citing one) is left as it is.
func TestPlaceholdersAreNotRedactedAgain(t *testing.T) {
	t.Parallel()
	r := ForSession(testSession)
	for _, in := range []string{
		"AWS_ACCESS_KEY_ID=[REDACTED:aws-access-token:hmac-sha256=",
		"x [REDACTED:key-value-secret:hmac-sha256=0123456789abcdef] y",
		`"quote": "token: [REDACTED:generic-api-key"`,
		"password=[REDACTED:password]",
	} {
		if got := r.String(in); got != in {
			t.Errorf("String(%q) = %q; want it unchanged", in, got)
		}
	}
}

func TestLineStart(t *testing.T) {
	texts := []string{"", "a", "\n", "abc\ndef", "0123456789abcdef\n0123456789abcdef0123\nxy", strings.Repeat("x", 40) + "\n" + strings.Repeat("y", 3)}
	for _, txt := range texts {
		b := []byte(txt)
		for base := 0; base <= len(b); base++ {
			for o := base; o <= len(b); o++ {
				want := bytes.LastIndexByte(b[base:o], '\n') + 1 + base
				if got := lineStart(b, base, o); got != want {
					t.Fatalf("lineStart(%q, %d, %d) = %d, want %d", txt, base, o, got, want)
				}
			}
		}
	}
}

func TestRuleThatCannotCompileWithholdsItsWindow(t *testing.T) {
	// Rule regexps compile on first use; should one ever fail, the text
	// it could not check is withheld, never passed through.
	// The shapes are the generated ones and the regexps are compiled on
	// first use, so each rule below parses fine and fails to compile.
	broken := gitleaksRules
	broken.Rules = slices.Clone(gitleaksRules.Rules)
	for i := range broken.Rules {
		broken.Rules[i].Regex = "(" + broken.Rules[i].Regex
	}
	rs, err := compileConfig(broken, gitleaksShapes, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.rules[0].re(); err == nil {
		t.Fatal("a broken regexp compiled")
	}
	out, _ := New(rs, nil).Redact("key id " + awsKeyID + " here")
	if strings.Contains(out, awsKeyID) || !strings.Contains(out, ruleUnavailable) {
		t.Fatalf("a rule that cannot compile let the text through: %q", out)
	}
	if out, _ := New(rs, nil).Redact("[exit 0]"); out != "[exit 0]" {
		t.Fatalf("a text without keywords needs no rule, yet: %q", out)
	}
}
