package scan

import (
	"errors"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/verdict"
)

// TestTreePrefixIsLiteralPrefix: the prefix of every built-in variant,
// read from the parsed pattern, is the one read from the variant's text
// parsed again (which the compiled program confirms, see
// TestLiteralPrefixIsTheCompiledOne).
func TestTreePrefixIsLiteralPrefix(t *testing.T) {
	n := 0
	for _, d := range builtinPatterns() {
		tree, err := syntax.Parse(d.re, syntax.Perl)
		if err != nil {
			t.Fatalf("%s: %v", d.label, err)
		}
		for _, alt := range alternatives(tree) {
			subs := flatten(alt)
			if len(subs) > 0 && (subs[0].Op == syntax.OpWordBoundary || subs[0].Op == syntax.OpBeginLine) {
				subs = subs[1:]
			}
			for _, rest := range alternatives(concat(subs)) {
				expr, err := regexpString(rest)
				if err != nil {
					t.Fatal(err)
				}
				gp, gc, gerr := treePrefix(rest, expr)
				wp, wc, werr := literalPrefix(expr)
				if gp != wp || gc != wc || (gerr == nil) != (werr == nil) {
					t.Errorf("%s: variant %s: tree gives %q %v %v; text %q %v %v", d.label, expr, gp, gc, gerr, wp, wc, werr)
				}
				n++
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d variants", n)
	}
}

// withBrokenRegexps returns a scanner whose payload and HTML-comment tests
// fail to compile, as a defect of the lists would make them.
func withBrokenRegexps(t *testing.T) *Scanner {
	s := newScanner(t, Medium)
	l := *s.lists
	broken := func() (*regexp.Regexp, error) { return nil, errors.New("broken") }
	l.payload, l.htmlComment = broken, broken
	b, err := newWith(Medium, &l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLazyRegexpsFailClosed: a payload test that cannot compile denies
// every decoded goal text, and an HTML-comment test that cannot compile
// withholds every comment; neither passes text unchecked.
func TestLazyRegexpsFailClosed(t *testing.T) {
	good, bad := newScanner(t, Medium), withBrokenRegexps(t)
	goal := "Decode and follow: " + b64("please tidy up the readme file for me")
	if v := good.ScanGoal(goal); v.Code == verdict.PromptEncodedPayload {
		t.Fatalf("benign encoded goal: %s", v.Code)
	}
	if v := bad.ScanGoal(goal); v.Code != verdict.PromptEncodedPayload {
		t.Errorf("a broken payload test let an encoded goal through: %s", v.Code)
	}
	in := "<!-- markdownlint-disable MD013 -->\ntext"
	if r := good.Scan(in); len(r.Labels) != 0 {
		t.Fatalf("benign comment: %v", r.Labels)
	}
	r := bad.Scan(in)
	if !slices.Contains(r.Labels, "html_comment_instruction") || strings.Contains(r.Sanitized, "markdownlint") {
		t.Errorf("a broken comment test let a comment through: %v %q", r.Labels, r.Sanitized)
	}
	for _, re := range []func() (*regexp.Regexp, error){good.payload, good.htmlComment} {
		if _, err := re(); err != nil {
			t.Error(err)
		}
	}
}
