package guard

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/verdict"
)

func TestParseReply(t *testing.T) {
	cases := []struct {
		name, in   string
		code       verdict.Code
		wantReason string
	}{
		// docs/design/checks.md#acceptance-cases case 44.
		{"case 44 ALLOW", "ALLOW", verdict.GuardAllow, "ALLOW"},
		{"case 44 allowed", "allowed", verdict.GuardUnparseable, "allowed"},
		{"case 44 Deny: off goal", "Deny: off goal", verdict.GuardDeny, "off goal"},
		{"case 44 ALLOW then DENY", "ALLOW\nDENY: x", verdict.GuardAllow, "ALLOW"},
		{"case 44 bold", "**ALLOW**", verdict.GuardUnparseable, "**ALLOW**"},
		// The other examples of docs/design/checks.md#guard-protocol.
		{"Allow.", "Allow.", verdict.GuardUnparseable, "Allow."},
		{"ALLOW but", "ALLOW but only once", verdict.GuardUnparseable, "ALLOW but only once"},
		{"bare DENY", "DENY", verdict.GuardUnparseable, "DENY"},
		{"DENY colon only", "DENY:   ", verdict.GuardUnparseable, "DENY:"},
		{"empty", "", verdict.GuardUnparseable, ""},
		{"whitespace only", " \n\t\n", verdict.GuardUnparseable, ""},
		// Normalisation steps.
		{"lowercase allow", "allow", verdict.GuardAllow, "allow"},
		{"BOM and spaces", "\uFEFF  \n ALLOW  \r\nmore", verdict.GuardAllow, "ALLOW"},
		{"CRLF deny", "DENY:\tdeletes data\r\nALLOW", verdict.GuardDeny, "deletes data"},
		{"deny no space", "deny:x", verdict.GuardDeny, "x"},
		{"leading blank lines", "\n\n\nALLOW", verdict.GuardAllow, "ALLOW"},
		{"BOM after whitespace", " \uFEFFALLOW", verdict.GuardUnparseable, "\uFEFFALLOW"},
		{"prefixed", "Verdict: ALLOW", verdict.GuardUnparseable, "Verdict: ALLOW"},
		{"quoted", `"ALLOW"`, verdict.GuardUnparseable, `"ALLOW"`},
		{"DENY with colon in reason", "DENY: rule: no writes", verdict.GuardDeny, "rule: no writes"},
		{"invalid utf-8", "DENY: bad \xff byte", verdict.GuardDeny, "bad \uFFFD byte"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ParseReply(tc.in)
			if r.Code != tc.code || r.Reason != tc.wantReason {
				t.Errorf("ParseReply(%q) = %s %q; want %s %q", tc.in, r.Code, r.Reason, tc.code, tc.wantReason)
			}
		})
	}
}

func TestParseReplyLimits(t *testing.T) {
	long := "DENY: " + strings.Repeat("é", 600) + "\nsecond line kept in raw"
	r := ParseReply(long)
	if r.Code != verdict.GuardDeny || utf8.RuneCountInString(r.Reason) != MaxReasonRunes {
		t.Fatalf("reason has %d characters, want %d", utf8.RuneCountInString(r.Reason), MaxReasonRunes)
	}
	if len(r.Raw) > MaxRawBytes || len(r.Raw) < MaxRawBytes-3 || !utf8.ValidString(r.Raw) || !strings.HasPrefix(long, r.Raw) {
		t.Fatalf("raw is %d bytes (valid %v); want the first ≤ 512 bytes at a character boundary", len(r.Raw), utf8.ValidString(r.Raw))
	}
	short := ParseReply("ALLOW\nbecause it lists files")
	if short.Raw != "ALLOW\nbecause it lists files" {
		t.Fatalf("raw = %q; later lines must be kept in raw", short.Raw)
	}
}

func FuzzParseReply(f *testing.F) {
	f.Add("ALLOW")                  // the one allow
	f.Add("Deny: off goal")         // case-insensitive deny with reason
	f.Add("ALLOW\nDENY: x")         // only the first line counts
	f.Add("\uFEFF\r\n ALLOW\r\n")   // BOM, CRLF, whitespace
	f.Add("**ALLOW**")              // markdown decoration
	f.Add("DENY:" + "\u00a0")       // non-ASCII space after the colon
	f.Add("ALLOW\u2028")            // a Unicode line separator
	f.Add("DENY: \xff\xfe")         // invalid UTF-8 in the reason
	f.Add(strings.Repeat("é", 700)) // over both limits
	f.Fuzz(func(t *testing.T, s string) {
		r := ParseReply(s)
		if utf8.RuneCountInString(r.Reason) > MaxReasonRunes || len(r.Raw) > MaxRawBytes || !utf8.ValidString(r.Raw) || !utf8.ValidString(r.Reason) {
			t.Fatalf("limits broken: reason %d runes, raw %d bytes", utf8.RuneCountInString(r.Reason), len(r.Raw))
		}
		switch r.Code {
		case verdict.GuardAllow:
			// An allow needs a first line that is exactly ALLOW, any case.
			first := strings.TrimLeftFunc(strings.TrimPrefix(strings.ToValidUTF8(s, "\uFFFD"), "\uFEFF"), unicode.IsSpace)
			if i := strings.IndexByte(first, '\n'); i >= 0 {
				first = first[:i]
			}
			if !strings.EqualFold(strings.TrimSpace(first), "ALLOW") {
				t.Fatalf("allowed %q (first line %q)", s, first)
			}
		case verdict.GuardDeny:
			if strings.TrimSpace(r.Reason) == "" || strings.ContainsRune(r.Reason, '\n') {
				t.Fatalf("deny with reason %q", r.Reason)
			}
		case verdict.GuardUnparseable:
		default:
			t.Fatalf("code %q", r.Code)
		}
	})
}
