package intent

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// TestJustificationCountsVisibleCharacters: the minimum length counts what
// a reader sees (item 8).
func TestJustificationCountsVisibleCharacters(t *testing.T) {
	rf := func(j string) string {
		return `{"action":"read_file","params":{"path":"a"},"justification":"` + j + `"}`
	}
	cases := []struct {
		name, just string
		short      bool
	}{
		{"five zero-width spaces", strings.Repeat(`\u200b`, 5), true},
		{"zero-width joiners and BOM", `\u200c\u200d\u2060\ufeff\u200b`, true},
		{"bidi controls", `\u202e\u202d\u2066\u2067\u2069`, true},
		{"control characters", `\u0001\u0002\u0003\u0004\u0005`, true},
		{"no-break spaces", strings.Repeat(`\u00a0`, 5), true},
		{"ideographic spaces", strings.Repeat(`\u3000`, 5), true},
		{"Hangul fillers", strings.Repeat(`\u3164`, 5), true},
		{"blank braille", strings.Repeat(`\u2800`, 5), true},
		{"combining marks alone", strings.Repeat(`\u0301`, 5), true},
		{"variation selectors", strings.Repeat(`\ufe0f`, 5), true},
		{"four letters padded", `\u200babcd\u200b`, true},
		{"five letters", "abcde", false},
		{"five letters with zero-width between", `a\u200bb\u200bc\u200bd\u200be`, false},
		{"accented", "éèêëē", false},
		{"decomposed accents", `e\u0301e\u0301e\u0301e\u0301e\u0301`, false},
		{"CJK", "日本語です", false},
		{"symbols", "🔒🔒🔒🔒🔒", false},
		{"digits and punctuation", "v1.2!", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(rf(tc.just), Options{MinJustification: 5})
			var e *Error
			short := err != nil && asError(err, &e) && e.Code == verdict.SchemaJustificationShort
			if short != tc.short {
				t.Fatalf("got %v; want short=%v", err, tc.short)
			}
			if short && !strings.Contains(e.Problem, "visible characters") {
				t.Fatalf("message %q does not say what counts", e.Problem)
			}
		})
	}
}

func asError(err error, e **Error) bool { return errors.As(err, e) }

// TestOneSizeLimit: one limit and one message for an oversized intent.
func TestOneSizeLimit(t *testing.T) {
	raw := `{"action":"complete","reasoning":"` + strings.Repeat("a", MaxRawBytes) + `"}`
	_, err := Parse(raw, Options{})
	var e *Error
	if !asError(err, &e) || e.Code != verdict.SchemaTooLarge {
		t.Fatalf("got %v; want schema_too_large", err)
	}
	want := fmt.Sprintf("$: the intent is %d bytes; one intent may be at most 65536 bytes (64 KiB): send a single, smaller intent", len(raw))
	if e.Error() != want {
		t.Fatalf("got %q; want %q", e.Error(), want)
	}
	if got := TooLarge(-1).Error(); got != "$: the intent is more than 65536 bytes; one intent may be at most 65536 bytes (64 KiB): send a single, smaller intent" {
		t.Fatalf("unknown size: %q", got)
	}
}

func FuzzVisibleLen(f *testing.F) {
	for _, s := range []string{"abcde", "\u200b\u200b", "e\u0301", "\u3164x", "日本", "\xff\xfe"} {
		f.Add(s) // letters, zero-width, combining, filler, CJK, invalid UTF-8
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := VisibleLen(s)
		if n < 0 || n > len([]rune(s)) {
			t.Fatalf("VisibleLen(%q) = %d", s, n)
		}
		if strings.TrimSpace(s) == "" && n != 0 {
			t.Fatalf("VisibleLen(%q) = %d for blanks", s, n)
		}
	})
}
