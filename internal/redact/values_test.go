package redact

import (
	"strings"
	"testing"
)

func TestValues(t *testing.T) {
	long := "sk-proj-Abc123xyz" // >= MinSubstringSecret: redacted everywhere
	cases := []struct {
		name, text string
		secrets    []string
		want       string
	}{
		{"one-letter key leaves words alone", "llm: openai: HTTP 401 Unauthorized: invalid key (check OPENAI_API_KEY)", []string{"k"},
			"llm: openai: HTTP 401 Unauthorized: invalid key (check OPENAI_API_KEY)"},
		{"one-letter key as a whole token", "Incorrect API key provided: k.", []string{"k"}, "Incorrect API key provided: [redacted]."},
		{"short key in a header echo", "Authorization: Bearer abc123", []string{"abc123"}, "Authorization: Bearer [redacted]"},
		{"short key quoted", `{"key":"abc123"}`, []string{"abc123"}, `{"key":"[redacted]"}`},
		{"short key at both ends", "abc123", []string{"abc123"}, "[redacted]"},
		{"short key inside a word", "xabc123 abc123x abc123_ _abc123", []string{"abc123"}, "xabc123 abc123x abc123_ _abc123"},
		{"short key next to a non-ASCII letter", "éabc123 abc123ß", []string{"abc123"}, "éabc123 abc123ß"},
		{"short key between punctuation", "key=abc123;x=(abc123)", []string{"abc123"}, "key=[redacted];x=([redacted])"},
		{"short key with a non-word edge", "a-x a -x", []string{"-x"}, "a[redacted] a [redacted]"},
		{"short key glued to itself through a non-word edge", "-a-a", []string{"-a"}, "[redacted]"},
		{"short key twice in a row is a longer word", "abab", []string{"ab"}, "abab"},
		{"long key inside a longer token", "token=xx" + long + "yy", []string{long}, "token=xx[redacted]yy"},
		{"long key repeated and overlapping", "aaaaaaaaaa", []string{"aaaaaaaa"}, "[redacted]"},
		{"two keys, one inside the other", "Bearer " + long, []string{"Abc1", long}, "Bearer [redacted]"},
		{"short key next to invalid UTF-8 is redacted", "\xffk\xff", []string{"k"}, "\xff[redacted]\xff"},
		{"empty key ignored", "some text", []string{""}, "some text"},
		{"no keys", "some text", nil, "some text"},
		{"key spelled like the placeholder", "[redacted] redacted", []string{"redacted"}, "[[redacted]] [redacted]"},
		{"threshold: 7 bytes is short", "x1234567 1234567", []string{"1234567"}, "x1234567 [redacted]"},
		{"threshold: 8 bytes is long", "x12345678 12345678", []string{"12345678"}, "x[redacted] [redacted]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Values(c.text, c.secrets...); got != c.want {
				t.Errorf("Values(%q, %q)\n got %q\nwant %q", c.text, c.secrets, got, c.want)
			}
		})
	}
}

// FuzzValues checks the promise of Values for any text and key: a long key
// never survives anywhere, a short key never survives as a whole token, and
// text that holds neither comes back unchanged.
func FuzzValues(f *testing.F) {
	for _, s := range [][2]string{
		{"invalid key k", "k"}, {"Bearer abc123", "abc123"}, {"xxsk-proj-12345678yy", "sk-proj-12345678"},
		{"-a-a", "-a"}, {"aaaaaaaaaa", "aaaaaaaa"}, {"\xffk\xff", "k"}, {"éabc", "abc"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, text, secret string) {
		out := Values(text, secret)
		if secret == "" || !strings.Contains(text, secret) {
			if out != text {
				t.Fatalf("Values(%q, %q) = %q, want the text unchanged", text, secret, out)
			}
			return
		}
		// The placeholder's own letters can spell a key ("redacted", "act");
		// those are no disclosure, so the check looks at the output with
		// each placeholder replaced by a byte no such key holds.
		if strings.ContainsAny(secret, "[]\x00") || strings.Contains(ValuePlaceholder, secret) {
			return
		}
		shown := strings.ReplaceAll(out, ValuePlaceholder, "\x00")
		for i := 0; i+len(secret) <= len(shown); i++ {
			if !strings.HasPrefix(shown[i:], secret) {
				continue
			}
			if len(secret) >= MinSubstringSecret || wholeToken(shown, secret, i) {
				t.Fatalf("Values(%q, %q) = %q: the key survives at %d", text, secret, out, i)
			}
		}
	})
}

func BenchmarkValuesOneLetterKey(b *testing.B) {
	text := strings.Repeat("the kernel keeps a key for each task; ", 1700) // about 64 KiB
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Values(text, "k", "sk-proj-0123456789abcdef")
	}
}
