package redact

import (
	"errors"
	"math/rand/v2"
	"regexp/syntax"
	"slices"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/ironvise/ironvise/internal/scanbench"
)

// ruleCorpus returns texts that exercise every built-in rule: for each rule,
// strings generated from its regexp (so the keyword, the regexp and the
// allowlists all run), each alone and inside a line of prose, plus benign
// texts and the secrets of the other tests.
func ruleCorpus(t testing.TB) []string {
	var cfg tomlConfig
	if err := toml.Unmarshal([]byte(gitleaksTOML), &cfg); err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	texts := []string{
		"", "[exit 0]", sourceCode(8 << 10), scanbench.BenignLog(8 << 10),
		"AWS_ACCESS_KEY_ID=" + awsKeyID, "aws_secret_access_key = " + awsSecret, `stripe.api_key = "` + stripeLive + `"`,
		"use " + githubToken + " to push", "DB_PASSWORD=hunter2\n", "token " + jwtToken + " end", pemKey,
		"Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0",
	}
	for _, tr := range cfg.Rules {
		tree, err := syntax.Parse(tr.Regex, syntax.Perl)
		if err != nil || tr.Regex == "" {
			continue
		}
		for range 4 {
			var b strings.Builder
			generate(&b, tree, rnd)
			texts = append(texts, b.String(), "line one\nsee "+b.String()+" for details\n")
		}
	}
	return texts
}

// generate writes a string that re matches (or nearly: assertions are
// skipped), choosing alternatives, class members and repeat counts at
// random.
func generate(b *strings.Builder, re *syntax.Regexp, rnd *rand.Rand) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 && rnd.IntN(2) == 0 {
				r = []rune(strings.ToUpper(string(r)))[0]
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		k := rnd.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[k], min(re.Rune[k+1], re.Rune[k]+200)
		b.WriteRune(lo + rune(rnd.IntN(int(hi-lo)+1)))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte("abcXYZ0189"[rnd.IntN(10)])
	case syntax.OpCapture:
		generate(b, re.Sub[0], rnd)
	case syntax.OpConcat:
		for _, s := range re.Sub {
			generate(b, s, rnd)
		}
	case syntax.OpAlternate:
		generate(b, re.Sub[rnd.IntN(len(re.Sub))], rnd)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 12
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 {
				hi = lo + 12
			}
		}
		for range lo + rnd.IntN(hi-lo+1) {
			generate(b, re.Sub[0], rnd)
		}
	}
}

// TestDeferredRulesRedactLikeEagerOnes: the built-in set, whose rules are
// parsed on first use, finds exactly what the set compiled up front finds,
// text by text, whichever texts come first.
func TestDeferredRulesRedactLikeEagerOnes(t *testing.T) {
	t.Parallel()
	texts := ruleCorpus(t)
	eager, err := Compile(gitleaksTOML)
	if err != nil {
		t.Fatal(err)
	}
	lazy, err := compileConfig(gitleaksRules, gitleaksShapes, false)
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	er, lr := New(eager, []byte(testSession)), New(lazy, []byte(testSession))
	for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(len(texts)) {
		want, got := er.Find(texts[i]), lr.Find(texts[i])
		if !slices.Equal(want, got) {
			t.Fatalf("text %q: deferred rules found %v; eager rules %v", texts[i], got, want)
		}
		hits += len(want)
	}
	if hits < len(eager.rules) {
		t.Fatalf("the corpus has %d findings for %d rules; it does not exercise the rules", hits, len(eager.rules))
	}
}

// TestCompileChecksEveryRule: Compile still reports a rule that does not
// parse, a secretGroup the regexp lacks and a broken allowlist, although the
// built-in set defers that work.
func TestCompileChecksEveryRule(t *testing.T) {
	t.Parallel()
	for name, src := range map[string]string{
		"bad regexp":       "[[rules]]\nid = 'x'\nregex = 'a(b'\nkeywords = ['abc']\n",
		"secretGroup":      "[[rules]]\nid = 'x'\nregex = 'abc(d)'\nsecretGroup = 2\nkeywords = ['abc']\n",
		"rule allowlist":   "[[rules]]\nid = 'x'\nregex = 'abc'\nkeywords = ['abc']\n[[rules.allowlists]]\nregexes = ['(']\n",
		"global allowlist": "[allowlist]\nregexes = ['(']\n",
	} {
		if _, err := Compile(src); err == nil {
			t.Errorf("%s: Compile accepted a broken rule set", name)
		}
	}
}

// TestDeferredRuleThatCannotParseWithholdsItsWindow: a rule whose deferred
// parse fails withholds the text around its keyword; a global or rule
// allowlist that fails to compile exempts nothing.
func TestDeferredRuleThatCannotParseWithholdsItsWindow(t *testing.T) {
	t.Parallel()
	rs, err := compile("[[rules]]\nid = 'x'\nregex = 'abc(d'\nkeywords = ['abc']\n", false)
	if err != nil {
		t.Fatalf("the deferred set checked its rules up front: %v", err)
	}
	out, _ := New(rs, nil).Redact("line one\nsee abcd here\nline three")
	if strings.Contains(out, "abcd") || !strings.Contains(out, ruleUnavailable) {
		t.Fatalf("a rule that cannot parse let the text through: %q", out)
	}
	if out, _ := New(rs, nil).Redact("no keyword"); out != "no keyword" {
		t.Fatalf("a text without the keyword needs no rule, yet: %q", out)
	}

	rs, err = compile("[allowlist]\nregexes = ['(']\n[[rules]]\nid = 'x'\nregex = 'abc\\d+'\nkeywords = ['abc']\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := New(rs, nil).Redact("see abc123 here"); strings.Contains(out, "abc123") {
		t.Fatalf("a broken global allowlist exempted a finding: %q", out)
	}
	rs, err = compile("[[rules]]\nid = 'x'\nregex = 'abc\\d+'\nkeywords = ['abc']\n[[rules.allowlists]]\nregexes = ['(']\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := New(rs, nil).Redact("see abc123 here"); strings.Contains(out, "abc123") {
		t.Fatalf("a broken rule allowlist exempted a finding: %q", out)
	}
	rs.global = func() (allowlist, error) { return allowlist{}, errors.New("broken") }
	if rs.allowedGlobally("abc123", "abc123", "see abc123 here") {
		t.Fatal("a broken global allowlist exempted a finding")
	}
}
