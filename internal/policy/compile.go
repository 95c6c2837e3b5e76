package policy

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// The raw shapes the TOML decoder fills. Leaves are `any` so that a wrong
// type is reported by the compiler with its key path and line, together
// with every other problem, instead of stopping the decoder at the first
// one. Rule tables are structs so that DisallowUnknownFields reports
// unknown keys inside them.
type (
	rawPolicy struct {
		Name                   any                  `toml:"name"`
		Version                any                  `toml:"version"`
		Description            any                  `toml:"description"`
		MaxSteps               any                  `toml:"max_steps"`
		AllowedActions         any                  `toml:"allowed_actions"`
		ForbiddenActions       any                  `toml:"forbidden_actions"`
		Executables            any                  `toml:"executables"`
		DefaultCommandDecision any                  `toml:"default_command_decision"`
		DefaultPathDecision    any                  `toml:"default_path_decision"`
		DefaultDomainDecision  any                  `toml:"default_domain_decision"`
		ApprovalTimeoutSeconds any                  `toml:"approval_timeout_seconds"`
		DefaultMCPToolDecision any                  `toml:"default_mcp_tool_decision"`
		CommandRules           []rawCommandRule     `toml:"command_rules"`
		PathRules              []rawPathRule        `toml:"path_rules"`
		DomainRules            []rawDomainRule      `toml:"domain_rules"`
		ApprovalGates          []rawGate            `toml:"approval_gates"`
		ObservationRules       []rawObservationRule `toml:"observation_rules"`
		Controls               []rawControl         `toml:"controls"`
		MCPToolRules           []rawMCPToolRule     `toml:"mcp_tool_rules"`
		Network                *rawNetwork          `toml:"network"`
		Workspace              *rawWorkspace        `toml:"workspace"`
	}
	rawCommandRule struct {
		ID          any `toml:"id"`
		Program     any `toml:"program"`
		Args        any `toml:"args"`
		Options     any `toml:"options"`
		OptionValue any `toml:"option_value"`
		Subcommand  any `toml:"subcommand"`
		Decision    any `toml:"decision"`
		Reason      any `toml:"reason"`
		Gate        any `toml:"gate"`
	}
	rawPathRule struct {
		ID       any `toml:"id"`
		Glob     any `toml:"glob"`
		Prefix   any `toml:"prefix"`
		Actions  any `toml:"actions"`
		Decision any `toml:"decision"`
		Reason   any `toml:"reason"`
		Gate     any `toml:"gate"`
	}
	rawDomainRule struct {
		ID       any `toml:"id"`
		Host     any `toml:"host"`
		CIDR     any `toml:"cidr"`
		Decision any `toml:"decision"`
		Reason   any `toml:"reason"`
		Gate     any `toml:"gate"`
	}
	rawGate struct {
		ID             any `toml:"id"`
		When           any `toml:"when"`
		TimeoutSeconds any `toml:"timeout_seconds"`
		OnTimeout      any `toml:"on_timeout"`
		Reason         any `toml:"reason"`
	}
	rawObservationRule struct {
		ID      any `toml:"id"`
		Label   any `toml:"label"`
		Pattern any `toml:"pattern"`
		Action  any `toml:"action"`
	}
	rawControl struct {
		ID       any `toml:"id"`
		Title    any `toml:"title"`
		Evidence any `toml:"evidence"`
	}
)

var (
	// Compiled on first use: the bounded repetitions expand to large
	// programs, and every run of the binary (the sandbox launcher and the
	// guard worker included) would otherwise pay for them at start-up.
	gateIDPattern  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })
	labelPattern   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9_]{1,64}$`) })
	decisions      = []verdict.Decision{verdict.Allow, verdict.Deny, verdict.RequireApproval}
	pathKindNames  = map[string]pathKinds{string(tripwire.KindReadFile): pkReadFile, string(tripwire.KindRedirectRead): pkRedirectRead, string(tripwire.KindRedirectWrite): pkRedirectWrite, string(tripwire.KindWriteFile): pkWriteFile}
	observeActions = map[string]scan.RuleAction{"redact": scan.RuleRedact, "flag": scan.RuleFlag, "abort": scan.RuleAbort}
)

// baseList is the name that expands to the default executable allowlist.
const baseList = "@base"

// compiler validates and compiles a decoded policy, collecting problems.
type compiler struct {
	ix       *docIndex
	problems []Problem
	fold     bool
	windows  bool
}

func (c *compiler) fail(path, format string, args ...any) {
	c.problems = append(c.problems, Problem{Line: c.ix.line(path), Key: path, Message: fmt.Sprintf(format, args...)})
}

func typeName(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "float"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "table"
	}
	return "datetime"
}

// str reads an optional string; ok is false when absent or wrong.
func (c *compiler) str(path string, v any) (string, bool) {
	if v == nil {
		return "", false
	}
	s, ok := v.(string)
	if !ok {
		c.fail(path, "expected string, got %s", typeName(v))
	}
	return s, ok
}

// required reads a required string.
func (c *compiler) required(path string, v any) (string, bool) {
	if v == nil {
		c.fail(path, "required")
		return "", false
	}
	return c.str(path, v)
}

// line checks a string that is printed in one-line messages: no control
// characters (a newline would forge a second message line), at most max
// bytes, not empty.
func (c *compiler) line(path, s string, max int) bool {
	switch {
	case strings.TrimSpace(s) == "":
		c.fail(path, "must not be empty")
	case len(s) > max:
		c.fail(path, "is %d bytes (max %d)", len(s), max)
	case strings.ContainsFunc(s, unicode.IsControl):
		c.fail(path, "must not contain control characters")
	default:
		return true
	}
	return false
}

// list reads an array of strings, or a single string when single is true.
// present is false when v is absent; a wrong element is reported and
// skipped.
func (c *compiler) list(path string, v any, single bool) (out []string, idx []int, present bool) {
	if v == nil {
		return nil, nil, false
	}
	if s, ok := v.(string); ok && single {
		return []string{s}, []int{-1}, true
	}
	arr, ok := v.([]any)
	if !ok {
		if single {
			c.fail(path, "expected string or array of strings, got %s", typeName(v))
		} else {
			c.fail(path, "expected array of strings, got %s", typeName(v))
		}
		return nil, nil, true
	}
	out = []string{}
	for i, e := range arr {
		s, ok := e.(string)
		if !ok {
			c.fail(indexKey(path, i), "expected string, got %s", typeName(e))
			continue
		}
		out, idx = append(out, s), append(idx, i)
	}
	return out, idx, true
}

// elemPath names element i of a list read by list (-1: a single string).
func elemPath(path string, i int) string {
	if i < 0 {
		return path
	}
	return indexKey(path, i)
}

func (c *compiler) integer(path string, v any, lo, hi, def int) int {
	if v == nil {
		return def
	}
	n, ok := v.(int64)
	if !ok {
		c.fail(path, "expected integer, got %s", typeName(v))
		return def
	}
	if n < int64(lo) || n > int64(hi) {
		c.fail(path, "must be from %d to %d (got %d)", lo, hi, n)
		return def
	}
	return int(n)
}

func (c *compiler) decision(path string, v any, def verdict.Decision) verdict.Decision {
	if v == nil {
		return def
	}
	s, ok := c.str(path, v)
	if !ok {
		return def
	}
	d := verdict.Decision(s)
	if !slices.Contains(decisions, d) {
		c.fail(path, "unknown decision %q (allowed: allow, deny, require_approval)", s)
		return def
	}
	return d
}

// actions reads allowed_actions or forbidden_actions.
func (c *compiler) actions(key string, v any) ([]intent.Action, bool) {
	list, idx, present := c.list(key, v, false)
	if !present {
		return nil, false
	}
	var out []intent.Action
	for k, s := range list {
		p := elemPath(key, idx[k])
		a := intent.Action(s)
		switch {
		case !a.Known():
			c.fail(p, "unknown action %q (allowed: %s)", s, actionList())
		case slices.Contains(out, a):
			c.fail(p, "duplicate action %q", s)
		default:
			out = append(out, a)
		}
	}
	return out, true
}

// compile turns a decoded policy into a Policy, collecting every problem.
func (c *compiler) compile(r *rawPolicy) *Policy {
	p := &Policy{fold: c.fold, windows: c.windows}
	if name, ok := c.required("name", r.Name); ok && c.line("name", name, 4*MaxNameRunes) {
		if n := utf8.RuneCountInString(name); n > MaxNameRunes {
			c.fail("name", "is %d characters (max %d)", n, MaxNameRunes)
		}
		p.name = name
	}
	if s, ok := c.str("version", r.Version); ok && c.line("version", s, MaxIDBytes) {
		p.version = s
	}
	p.description, _ = c.str("description", r.Description)
	if r.MaxSteps != nil {
		p.maxSteps = c.integer("max_steps", r.MaxSteps, MinMaxSteps, MaxMaxSteps, 0)
	}
	c.compileActions(p, r)
	c.compileExecutables(p, r.Executables)
	p.defaults[kindCommand] = c.decision("default_command_decision", r.DefaultCommandDecision, verdict.Allow)
	p.defaults[kindPath] = c.decision("default_path_decision", r.DefaultPathDecision, verdict.Allow)
	p.defaults[kindDomain] = c.decision("default_domain_decision", r.DefaultDomainDecision, verdict.Allow)
	p.approvalTTL = c.integer("approval_timeout_seconds", r.ApprovalTimeoutSeconds, MinTimeoutSeconds, MaxTimeoutSeconds, DefaultTimeoutSeconds)
	// Gates first: rules refer to them.
	for i := range r.ApprovalGates {
		c.compileGate(p, indexKey("approval_gates", i), &r.ApprovalGates[i])
	}
	ids := map[string]bool{}
	for i := range r.CommandRules {
		c.compileCommandRule(p, i, &r.CommandRules[i], ids)
	}
	ids = map[string]bool{}
	for i := range r.PathRules {
		c.compilePathRule(p, i, &r.PathRules[i], ids)
	}
	ids = map[string]bool{}
	for i := range r.DomainRules {
		c.compileDomainRule(p, i, &r.DomainRules[i], ids)
	}
	for i := range r.ObservationRules {
		c.compileObservation(p, i, &r.ObservationRules[i])
	}
	for i := range r.Controls {
		c.compileControl(p, i, &r.Controls[i])
	}
	p.mcpDefault = c.decision("default_mcp_tool_decision", r.DefaultMCPToolDecision, verdict.Allow)
	ids = map[string]bool{}
	for i := range r.MCPToolRules {
		c.compileMCPToolRule(p, i, &r.MCPToolRules[i], ids)
	}
	c.compileNetwork(p, r.Network)
	c.compileWorkspace(p, r.Workspace)
	return p
}

func (c *compiler) compileActions(p *Policy, r *rawPolicy) {
	allowed, allowedSet := c.actions("allowed_actions", r.AllowedActions)
	switch {
	case !allowedSet:
		p.allowed = slices.Clone(intent.Actions)
	case isEmptyList(r.AllowedActions):
		c.fail("allowed_actions", "must not be empty (it must contain %q)", intent.Complete)
	case isList(r.AllowedActions) && !slices.Contains(allowed, intent.Complete):
		// Without complete a session could never finish normally.
		c.fail("allowed_actions", "must contain %q", intent.Complete)
	default:
		p.allowed = allowed
	}
	forbidden, _ := c.actions("forbidden_actions", r.ForbiddenActions)
	for k, a := range forbidden {
		path := indexKey("forbidden_actions", indexOfAction(r.ForbiddenActions, a, k))
		switch {
		case a == intent.Complete:
			c.fail(path, "%q cannot be forbidden: a session must be able to finish", a)
		case allowedSet && slices.Contains(allowed, a):
			c.fail(path, "%q is also in allowed_actions", a)
		}
	}
	p.forbidden = forbidden
}

func isList(v any) bool { _, ok := v.([]any); return ok }

func isEmptyList(v any) bool { a, ok := v.([]any); return ok && len(a) == 0 }

// indexOfAction finds the array index of the k-th valid action a, for the
// key path of a message.
func indexOfAction(v any, a intent.Action, k int) int {
	if arr, ok := v.([]any); ok {
		for i, e := range arr {
			if s, ok := e.(string); ok && intent.Action(s) == a {
				return i
			}
		}
	}
	return k
}

func (c *compiler) compileExecutables(p *Policy, v any) {
	list, idx, present := c.list("executables", v, false)
	if !present {
		return
	}
	p.executables = []string{}
	for k, g := range list {
		path := elemPath("executables", idx[k])
		switch {
		case g == baseList:
			p.executables = append(p.executables, tripwire.DefaultAllowlist...)
		case strings.HasPrefix(g, "@"):
			c.fail(path, "unknown list %q (known: %s)", g, baseList)
		default:
			if _, err := compileNameGlob(g, c.fold); err != nil {
				c.fail(path, "%v", err)
				continue
			}
			p.executables = append(p.executables, g)
		}
	}
	for _, g := range p.executables {
		ng, _ := compileNameGlob(g, c.fold) // validated above; @base entries are plain names
		p.exeGlobs = append(p.exeGlobs, ng)
	}
}

func (c *compiler) compileGate(p *Policy, path string, r *rawGate) {
	g := Gate{TimeoutSeconds: DefaultTimeoutSeconds, OnTimeout: OnTimeoutDeny}
	ok := true
	if id, present := c.required(path+".id", r.ID); present {
		switch {
		case !gateIDPattern().MatchString(id):
			c.fail(path+".id", "%q does not match ^[a-z0-9][a-z0-9_-]{0,63}$", id)
			ok = false
		case id == DefaultGateID:
			c.fail(path+".id", "%q is reserved for the implicit gate of rules that name none", id)
			ok = false
		case slices.ContainsFunc(p.gates, func(o Gate) bool { return o.ID == id }):
			c.fail(path+".id", "duplicate gate id %q", id)
			ok = false
		}
		g.ID = id
	} else {
		ok = false
	}
	if w, present := c.str(path+".when", r.When); present {
		e, err := compileExpr(w, c.fold, c.windows)
		if err != nil {
			c.fail(path+".when", "%v", err)
			ok = false
		}
		g.When, g.when = w, e
	}
	g.TimeoutSeconds = c.integer(path+".timeout_seconds", r.TimeoutSeconds, MinTimeoutSeconds, MaxTimeoutSeconds, DefaultTimeoutSeconds)
	if s, present := c.str(path+".on_timeout", r.OnTimeout); present {
		switch OnTimeout(s) {
		case OnTimeoutDeny, OnTimeoutAllow:
			g.OnTimeout = OnTimeout(s)
		default:
			c.fail(path+".on_timeout", "unknown value %q (allowed: deny, allow)", s)
		}
	}
	if s, present := c.str(path+".reason", r.Reason); present && c.line(path+".reason", s, MaxReasonBytes) {
		g.Reason = s
	}
	if ok {
		p.gates = append(p.gates, g)
	}
}

// compileRule reads what every command, path and domain rule has.
func (c *compiler) compileRule(p *Policy, table string, i int, id, decision, reason, gate any, ids map[string]bool) rule {
	path := indexKey(table, i)
	r := rule{id: path, index: i}
	if s, present := c.str(path+".id", id); present && c.line(path+".id", s, MaxIDBytes) {
		if ids[s] {
			// The id is what a verdict records; two rules with one id would
			// make the audit trail ambiguous.
			c.fail(path+".id", "duplicate rule id %q in %s", s, table)
		}
		ids[s] = true
		r.id = s
	}
	if decision == nil {
		c.fail(path+".decision", "required")
	} else {
		r.decision = c.decision(path+".decision", decision, verdict.Deny)
	}
	if s, present := c.str(path+".reason", reason); present && c.line(path+".reason", s, MaxReasonBytes) {
		r.reason = s
	}
	if s, present := c.str(path+".gate", gate); present {
		switch {
		case r.decision != verdict.RequireApproval:
			c.fail(path+".gate", "a gate is allowed only with decision = \"require_approval\"")
		case s == DefaultGateID:
			r.gate = "" // naming the implicit gate is the same as naming none
		case !slices.ContainsFunc(p.gates, func(g Gate) bool { return g.ID == s }):
			c.fail(path+".gate", "no approval gate has id %q", s)
		default:
			r.gate = s
		}
	}
	return r
}

func (c *compiler) compileCommandRule(p *Policy, i int, r *rawCommandRule, ids map[string]bool) {
	cr := commandRule{rule: c.compileRule(p, "command_rules", i, r.ID, r.Decision, r.Reason, r.Gate, ids)}
	path := indexKey("command_rules", i)
	progs, idx, present := c.list(path+".program", r.Program, true)
	switch {
	case !present:
		c.fail(path+".program", "required")
	case progs != nil && len(progs) == 0 && isEmptyList(r.Program):
		c.fail(path+".program", "must not be empty")
	}
	for k, g := range progs {
		ng, err := compileNameGlob(g, c.fold)
		if err != nil {
			c.fail(elemPath(path+".program", idx[k]), "%v", err)
			continue
		}
		if g == "*" {
			cr.anyProg = true
		}
		cr.programs = append(cr.programs, ng)
	}
	if s, present := c.str(path+".args", r.Args); present {
		re, err := regexp.Compile(s)
		if err != nil {
			c.fail(path+".args", "bad regex: %v", err)
		}
		cr.args = re
	}
	// options, option_value and subcommand read the command line with the
	// option model the tripwire uses (package shell), so `rm -vr`,
	// `rm --recur`, `git --config-env=…` and `npm --registry R i` are what
	// they are; their regexes match whole values.
	opts, oidx, _ := c.list(path+".options", r.Options, true)
	for k, o := range opts {
		if len(o) < 2 || o[0] != '-' || strings.ContainsAny(o, " =") {
			c.fail(elemPath(path+".options", oidx[k]), "%q is not an option name (write -x or --long, without a value)", o)
			continue
		}
		cr.test.Options = append(cr.test.Options, o)
	}
	full := func(key string, v any) *regexp.Regexp {
		s, present := c.str(path+"."+key, v)
		if !present {
			return nil
		}
		re, err := regexp.Compile(`^(?:` + s + `)$`)
		if err != nil {
			c.fail(path+"."+key, "bad regex: %v", err)
			return nil
		}
		return re
	}
	cr.test.OptionValue = full("option_value", r.OptionValue)
	cr.test.Subcommand = full("subcommand", r.Subcommand)
	p.commandRules = append(p.commandRules, cr)
}

func (c *compiler) compilePathRule(p *Policy, i int, r *rawPathRule, ids map[string]bool) {
	pr := pathRule{rule: c.compileRule(p, "path_rules", i, r.ID, r.Decision, r.Reason, r.Gate, ids), kinds: pkAll}
	path := indexKey("path_rules", i)
	if (r.Glob == nil) == (r.Prefix == nil) {
		c.fail(path, "set exactly one of glob or prefix")
	}
	pr.globs = compileEach(c, path+".glob", r.Glob, func(g string) (*pathGlob, error) { return compilePathGlob(g, c.fold, c.windows) })
	pr.prefixes = compileEach(c, path+".prefix", r.Prefix, func(s string) (string, error) { return compilePrefix(s, c.fold, c.windows) })
	if kinds, kidx, present := c.list(path+".actions", r.Actions, false); present {
		pr.kinds = 0
		if len(kinds) == 0 && isEmptyList(r.Actions) {
			c.fail(path+".actions", "must not be empty (omit it to match every use of a path)")
		}
		for k, s := range kinds {
			bit, ok := pathKindNames[s]
			switch {
			case !ok:
				c.fail(elemPath(path+".actions", kidx[k]), "unknown path action %q (allowed: read_file, redirect_read, redirect_write, write_file)", s)
			case pr.kinds&bit != 0:
				c.fail(elemPath(path+".actions", kidx[k]), "duplicate path action %q", s)
			}
			pr.kinds |= bit
		}
	}
	p.pathRules = append(p.pathRules, pr)
}

// compileEach compiles each string of the list at key (a string or a list
// of strings; when given, not empty), reporting an element's error at its
// own path.
func compileEach[T any](c *compiler, key string, raw any, compile func(string) (T, error)) []T {
	list, idx, _ := c.list(key, raw, true)
	if list != nil && len(list) == 0 && isEmptyList(raw) {
		c.fail(key, "must not be empty")
	}
	var out []T
	for k, s := range list {
		v, err := compile(s)
		if err != nil {
			c.fail(elemPath(key, idx[k]), "%v", err)
			continue
		}
		out = append(out, v)
	}
	return out
}

func (c *compiler) compileDomainRule(p *Policy, i int, r *rawDomainRule, ids map[string]bool) {
	dr := domainRule{rule: c.compileRule(p, "domain_rules", i, r.ID, r.Decision, r.Reason, r.Gate, ids)}
	path := indexKey("domain_rules", i)
	if (r.Host == nil) == (r.CIDR == nil) {
		c.fail(path, "set exactly one of host or cidr")
	}
	dr.hosts = compileEach(c, path+".host", r.Host, normalizeHost)
	dr.cidrs = compileEach(c, path+".cidr", r.CIDR, compileCIDR)
	p.domainRules = append(p.domainRules, dr)
}

func (c *compiler) compileObservation(p *Policy, i int, r *rawObservationRule) {
	path := indexKey("observation_rules", i)
	or := scan.ObservationRule{ID: path}
	if s, present := c.str(path+".id", r.ID); present && c.line(path+".id", s, MaxIDBytes) {
		or.ID = s
	}
	if s, present := c.required(path+".label", r.Label); present {
		if !labelPattern().MatchString(s) {
			c.fail(path+".label", "%q does not match ^[a-z0-9_]{1,64}$", s)
		}
		or.Label = s
	}
	if s, present := c.required(path+".pattern", r.Pattern); present {
		re, err := regexp.Compile(s)
		if err != nil {
			c.fail(path+".pattern", "bad regex: %v", err)
		}
		or.Pattern = re
	}
	if s, present := c.required(path+".action", r.Action); present {
		a, ok := observeActions[s]
		if !ok {
			c.fail(path+".action", "unknown action %q (allowed: redact, flag, abort)", s)
		}
		or.Action = a
	}
	// The scanner's own check: a rule it could not apply would abort every
	// observation at run time, so it must fail here.
	if len(c.problems) == 0 {
		if err := or.Validate(); err != nil {
			c.fail(path, "%v", err)
		}
	}
	p.observation = append(p.observation, or)
}

func (c *compiler) compileControl(p *Policy, i int, r *rawControl) {
	path := indexKey("controls", i)
	var ct Control
	if s, ok := c.required(path+".id", r.ID); ok && c.line(path+".id", s, MaxIDBytes) {
		ct.ID = s
	}
	if s, ok := c.required(path+".title", r.Title); ok && c.line(path+".title", s, MaxReasonBytes) {
		ct.Title = s
	}
	if s, ok := c.required(path+".evidence", r.Evidence); ok && c.line(path+".evidence", s, MaxReasonBytes) {
		ct.Evidence = s
	}
	p.controls = append(p.controls, ct)
}
