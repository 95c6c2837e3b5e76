package redact

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"

	"github.com/pelletier/go-toml/v2"
)

// tomlConfig is the layout of a gitleaks configuration file. Decoding
// rejects unknown fields, so a new field in an updated file is noticed by the
// tests instead of being silently ignored.
type tomlConfig struct {
	Title      string        `toml:"title"`
	MinVersion string        `toml:"minVersion"`
	Allowlist  tomlAllowlist `toml:"allowlist"`
	Rules      []tomlRule    `toml:"rules"`
}

type tomlRule struct {
	ID          string          `toml:"id"`
	Description string          `toml:"description"`
	Regex       string          `toml:"regex"`
	SecretGroup int             `toml:"secretGroup"`
	Entropy     float64         `toml:"entropy"`
	Keywords    []string        `toml:"keywords"`
	Path        string          `toml:"path"`
	Allowlists  []tomlAllowlist `toml:"allowlists"`
}

type tomlAllowlist struct {
	Description string   `toml:"description"`
	Condition   string   `toml:"condition"`
	Paths       []string `toml:"paths"`
	RegexTarget string   `toml:"regexTarget"`
	Regexes     []string `toml:"regexes"`
	Stopwords   []string `toml:"stopwords"`
}

// replacedRules are gitleaks rules that a pass of this package replaces:
// private-key needs the END line and runs over whole files, jwt keys on the
// two letters "ey", which occur in most English text.
var replacedRules = map[string]string{"private-key": rulePrivateKey, "jwt": ruleJWT}

// Rule ids of the passes of this package.
const (
	rulePrivateKey = "private-key"
	ruleJWT        = "jwt"
	ruleURLPass    = "url-password"
	ruleKeyValue   = "key-value-secret"
)

// Rules is a compiled rule set. It is immutable and safe for concurrent use.
type Rules struct {
	rules []rule
	// global compiles the global allowlist on first use: only a match
	// needs it.
	global func() (allowlist, error)
	kw     keywordIndex
	// passes are the hand-written passes, each keyed on keyword ids.
	passes []pass
	// broken holds the error of a rule set that failed to compile; such a
	// set redacts every text whole (see Default).
	broken error
}

// rule is one gitleaks rule. Only what the keyword search needs is built
// with the set; the rest waits for the first text holding one of the
// rule's keywords: parsing and compiling every regexp is most of the cost
// of a rule set, and most rules never see their keyword in a process
// (docs/operate/performance.md#start-up).
//
// The deferred parts are the rule's own fields, each behind a sync.Once,
// rather than a closure per part: building the 200-odd closures and their
// once-values was most of the 0.3 ms of CPU and 2,200 allocations that the
// default set cost every process that redacts (every exec, every hook).
// A rule is therefore used through a pointer into Rules.rules, which is
// never appended to after compileConfig.
type rule struct {
	id string
	// src is the rule as configured: its regexp and allowlists, compiled
	// on first use.
	src *tomlRule

	// shape (parsed on first use unless the set was built with it,
	// gitleaksShapes) is what the rule's parsed regexp gives. An error
	// withholds every window of the rule (fail closed).
	shapeOnce sync.Once
	shapeV    *ruleShape
	shapeErr  error
	// allow, compiled on the rule's first match: an error exempts
	// nothing, the match stays redacted.
	allowOnce sync.Once
	allowV    []allowlist
	allowErr  error
	// re, compiled on the first window that needs it.
	reOnce sync.Once
	reV    *regexp.Regexp
	reErr  error

	// group is the secret's capture group (secretGroup); when 0, the
	// first of groups that took part in the match is the secret, and the
	// whole match when none did.
	group    int
	entropy  float64
	keywords []int
	// assign says the rule's keyword is followed by an assignment
	// operator and a value (the "name = value" shape of most service
	// rules), which is checked before any regexp runs.
	assign bool
	// follow, for a keyword shorter than three bytes, is a cheap necessary
	// condition on the bytes after it.
	follow func(lower []byte, at int) bool
}

// ruleShape is what a rule's parsed regexp gives.
type ruleShape struct {
	groups []int // the unnamed capture groups, in order
	// clauses hold literals every match contains (prefilter.go).
	clauses []clause
}

// allowlist is one compiled gitleaks allowlist.
type allowlist struct {
	and       bool
	target    string // "secret", "match" or "line"
	regexes   []*regexp.Regexp
	stopwords []string
	// paths says the allowlist has path criteria; an observation has no
	// path, so they never hold.
	paths bool
}

// assignShape is how the gitleaks rules of the "name = value" family write
// the part after the service name.
const assignShape = `(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)`

// defaultRules is built from gitleaksRules, the default rule set of
// gitleaks v8 (gitleaks.toml, see its header for the source and licence)
// already decoded into Go (gitleaks_rules.go): decoding the TOML cost more
// than the rest of building the set.
var defaultRules = sync.OnceValue(func() *Rules {
	r, err := compileConfig(gitleaksRules, gitleaksShapes, false)
	if err != nil {
		return &Rules{broken: bug(err)}
	}
	return r
})

// Default returns the built-in rule set, compiled on first use. The
// embedded rules are tested; should they ever fail to compile, the returned
// set fails closed and replaces every text whole with a placeholder naming
// rule "redactor-unavailable".
func Default() *Rules { return defaultRules() }

// Err returns the error of a rule set that failed to compile, or nil.
func (rs *Rules) Err() error { return rs.broken }

// Compile compiles a gitleaks configuration (TOML) and adds the passes of
// this package. Every regexp and allowlist is checked, so a defect is
// reported here; the built-in set (Default) defers that work to first use
// and is checked by the tests instead.
func Compile(src string) (*Rules, error) { return compile(src, true) }

// compile decodes and builds a rule set (compileConfig).
func compile(src string, eager bool) (*Rules, error) {
	dec := toml.NewDecoder(strings.NewReader(src))
	dec.DisallowUnknownFields()
	var cfg tomlConfig
	if err := dec.Decode(&cfg); err != nil {
		return nil, fmt.Errorf("redact: decode rules: %w", err)
	}
	return compileConfig(cfg, nil, eager)
}

// compileConfig builds a rule set; eager forces every rule's deferred work
// and returns its first error. shapes, when set, holds the shape of each
// rule of cfg (by index), which then needs no parsing.
func compileConfig(cfg tomlConfig, shapes []*ruleShape, eager bool) (*Rules, error) {
	rs := &Rules{global: sync.OnceValues(func() (allowlist, error) {
		a, err := compileAllowlist(cfg.Allowlist)
		if err != nil {
			return a, fmt.Errorf("redact: global allowlist: %w", err)
		}
		return a, nil
	})}
	// Room for every keyword of the rules and the passes at once (a short
	// keyword's expansion may still grow it).
	passes := builtinPasses()
	n := 0
	for _, tr := range cfg.Rules {
		n += len(tr.Keywords)
	}
	for _, p := range passes {
		n += len(p.words)
	}
	kws := make([]kwDef, 0, n)
	// Room for every rule: a rule is used through a pointer into the
	// slice (see rule), so it must never move.
	rs.rules = make([]rule, 0, len(cfg.Rules))
	for i, tr := range cfg.Rules {
		if tr.Regex == "" || tr.Path != "" {
			continue // path rules need a file name an observation lacks
		}
		if _, ok := replacedRules[tr.ID]; ok {
			continue
		}
		rs.rules = append(rs.rules, rule{id: tr.ID, src: &cfg.Rules[i], group: tr.SecretGroup, entropy: tr.Entropy, assign: strings.Contains(tr.Regex, assignShape)})
		r := &rs.rules[len(rs.rules)-1]
		if i < len(shapes) && shapes[i] != nil {
			r.shapeV = shapes[i]
		}
		if len(tr.Keywords) == 0 {
			return nil, fmt.Errorf("redact: rule %s has no keywords; every rule must name one so it is not run on every text", tr.ID)
		}
		for _, k := range tr.Keywords {
			k = strings.ToLower(k)
			words := []string{k}
			if len(k) < 3 {
				sk, ok := shortKeywords[tr.ID+" "+k]
				if !ok {
					return nil, fmt.Errorf("redact: rule %s: keyword %q is shorter than three bytes and has no expansion", tr.ID, k)
				}
				words = sk.expand(k)
				r.follow = sk.follow
			}
			for _, w := range words {
				r.keywords = append(r.keywords, len(kws))
				kws = append(kws, kwDef{word: w})
			}
		}
	}
	for _, p := range passes {
		ids := make([]int, 0, len(p.words))
		for _, w := range p.words {
			ids = append(ids, len(kws))
			kws = append(kws, kwDef{word: w})
		}
		p.keywords = ids
		rs.passes = append(rs.passes, p)
	}
	var err error
	if rs.kw, err = newKeywordIndex(kws); err != nil {
		return nil, fmt.Errorf("redact: keywords: %w", err)
	}
	// Keyword ids were given per occurrence in a rule; the index merges
	// equal words, so map them to its ids.
	for i := range rs.rules {
		for j, k := range rs.rules[i].keywords {
			rs.rules[i].keywords[j] = rs.kw.id[k]
		}
	}
	for i := range rs.passes {
		for j, k := range rs.passes[i].keywords {
			rs.passes[i].keywords[j] = rs.kw.id[k]
		}
	}
	if eager {
		if err := rs.check(); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// check does every rule's deferred work and returns the first error.
func (rs *Rules) check() error {
	if _, err := rs.global(); err != nil {
		return err
	}
	for i := range rs.rules {
		if _, err := rs.rules[i].shape(); err != nil {
			return err
		}
		if _, err := rs.rules[i].allow(); err != nil {
			return err
		}
		if _, err := rs.rules[i].re(); err != nil {
			return fmt.Errorf("redact: rule %s: %w", rs.rules[i].id, err)
		}
	}
	return nil
}

// shape returns what the rule's parsed regexp gives (see rule).
func (r *rule) shape() (*ruleShape, error) {
	r.shapeOnce.Do(func() {
		if r.shapeV == nil {
			r.shapeV, r.shapeErr = parseShape(*r.src)
		}
	})
	return r.shapeV, r.shapeErr
}

// allow returns the rule's compiled allowlists (see rule).
func (r *rule) allow() ([]allowlist, error) {
	r.allowOnce.Do(func() { r.allowV, r.allowErr = compileAllowlists(*r.src) })
	return r.allowV, r.allowErr
}

// re returns the rule's compiled regexp (see rule).
func (r *rule) re() (*regexp.Regexp, error) {
	r.reOnce.Do(func() { r.reV, r.reErr = regexp.Compile(r.src.Regex) })
	return r.reV, r.reErr
}

// parseShape parses a rule's regexp, which gives what regexp.Compile would
// check and report (its groups) and the literals every match holds.
func parseShape(tr tomlRule) (*ruleShape, error) {
	tree, err := syntax.Parse(tr.Regex, syntax.Perl)
	if err != nil {
		return nil, fmt.Errorf("redact: rule %s: %w", tr.ID, err)
	}
	if tr.SecretGroup > tree.MaxCap() {
		return nil, fmt.Errorf("redact: rule %s: secretGroup %d of %d groups", tr.ID, tr.SecretGroup, tree.MaxCap())
	}
	sh := &ruleShape{}
	// A clause that one of the rule's keywords satisfies holds in
	// every window (the window holds the keyword).
	for _, c := range requiredClauses(tree) {
		if !clauseHasKeyword(c, tr.Keywords) {
			sh.clauses = append(sh.clauses, c)
		}
	}
	// Named groups mark alternatives (jwt-base64 names the JOSE
	// member each prefix encodes), never the secret.
	for k, name := range tree.CapNames() {
		if k > 0 && name == "" {
			sh.groups = append(sh.groups, k)
		}
	}
	return sh, nil
}

// compileAllowlists compiles the allowlists of a rule.
func compileAllowlists(tr tomlRule) ([]allowlist, error) {
	var out []allowlist
	for i, ta := range tr.Allowlists {
		a, err := compileAllowlist(ta)
		if err != nil {
			return nil, fmt.Errorf("redact: rule %s allowlist %d: %w", tr.ID, i, err)
		}
		out = append(out, a)
	}
	return out, nil
}

func compileAllowlist(ta tomlAllowlist) (allowlist, error) {
	a := allowlist{and: strings.EqualFold(ta.Condition, "AND"), target: ta.RegexTarget, paths: len(ta.Paths) > 0}
	switch a.target {
	case "":
		a.target = "secret"
	case "secret", "match", "line":
	default:
		return a, fmt.Errorf("regexTarget %q (accepted: secret, match, line)", ta.RegexTarget)
	}
	if c := strings.ToUpper(ta.Condition); c != "" && c != "AND" && c != "OR" {
		return a, fmt.Errorf("condition %q (accepted: AND, OR)", ta.Condition)
	}
	for _, s := range ta.Regexes {
		re, err := regexp.Compile(s)
		if err != nil {
			return a, err
		}
		a.regexes = append(a.regexes, re)
	}
	for _, w := range ta.Stopwords {
		a.stopwords = append(a.stopwords, strings.ToLower(w))
	}
	return a, nil
}

// allows reports whether the allowlist exempts a finding. With the OR
// condition (the default) one criterion that holds is enough; with AND every
// criterion the list has must hold.
func (a *allowlist) allows(secret, match, line string) bool {
	if len(a.regexes) == 0 && len(a.stopwords) == 0 {
		return false // a paths-only list: no path, never holds
	}
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	reHit := false
	for _, re := range a.regexes {
		if re.MatchString(target) {
			reHit = true
			break
		}
	}
	stopHit := false
	if len(a.stopwords) > 0 {
		low := strings.ToLower(secret)
		for _, w := range a.stopwords {
			if strings.Contains(low, w) {
				stopHit = true
				break
			}
		}
	}
	if a.and {
		return !a.paths && (len(a.regexes) == 0 || reHit) && (len(a.stopwords) == 0 || stopHit)
	}
	return reHit || stopHit
}

// shortKeyword is how a gitleaks keyword shorter than three bytes is
// searched for: such a keyword occurs in most text, so it is expanded into
// three-byte keywords with the byte that must come before (prev) or after
// (next) it, and follow, a necessary condition derived by hand from the
// rule's regexp, is checked at each occurrence before any regexp runs.
type shortKeyword struct {
	prev, next string
	follow     func(lower []byte, at int) bool
}

func (sk shortKeyword) expand(k string) []string {
	var out []string
	for i := 0; i < len(sk.prev); i++ {
		out = append(out, string(sk.prev[i])+k)
	}
	for i := 0; i < len(sk.next); i++ {
		out = append(out, k+string(sk.next[i]))
	}
	return out
}

var shortKeywords = map[string]shortKeyword{
	// SK[0-9a-fA-F]{32}
	"twilio-api-key sk": {next: "0123456789abcdef", follow: func(l []byte, at int) bool { return runOf(l, at+2, 32, isHexByte) }},
	// s\.(?i:[a-z0-9]{24})
	"vault-service-token s.": {next: "abcdefghijklmnopqrstuvwxyz0123456789", follow: func(l []byte, at int) bool {
		return runOf(l, at+2, 24, isAlnumByte)
	}},
	// [a-zA-Z0-9_~.]{3}\dQ~…: the digit before the keyword.
	"azure-ad-client-secret q~": {prev: "0123456789"},
}

// clauseHasKeyword reports whether a literal of c occurs in one of the
// keywords, so that every window of the rule satisfies c.
func clauseHasKeyword(c clause, keywords []string) bool {
	for _, l := range c {
		for _, k := range keywords {
			if strings.Contains(strings.ToLower(k), l) {
				return true
			}
		}
	}
	return false
}

// runOf reports whether l[from:from+n] exists and every byte satisfies ok.
func runOf(l []byte, from, n int, ok func(byte) bool) bool {
	if from+n > len(l) {
		return false
	}
	for _, c := range l[from : from+n] {
		if !ok(c) {
			return false
		}
	}
	return true
}

func isHexByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}
func isAlnumByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// entropy returns the Shannon entropy of s in bits per byte.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// lineAround returns the line of t that holds [s, e).
func lineAround(t string, s, e int) string {
	a := strings.LastIndexByte(t[:s], '\n') + 1
	b := strings.IndexByte(t[e:], '\n')
	if b < 0 {
		return t[a:]
	}
	return t[a : e+b]
}

// bug marks a failure that cannot happen unless the embedded rules are
// broken, so it can be searched for and alerted on.
func bug(err error) error {
	return fmt.Errorf("redact: internal error (the built-in rules do not compile; please report): %w", err)
}
