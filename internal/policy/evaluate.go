package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// contribution is one reason for a restrictive item decision: a matching
// rule, or the default of the item's kind (r == nil). The item is kept as
// a pointer and described only if the contribution is reported.
type contribution struct {
	kind itemKind
	r    *rule
	cmd  *shell.Command
	path *tripwire.PathView
	url  *tripwire.URLView
}

// item describes the item for a message.
func (c contribution) item() string {
	switch c.kind {
	case kindCommand:
		if c.cmd.Program != "" {
			return fmt.Sprintf("program %q", c.cmd.Program)
		}
		return fmt.Sprintf("program %q (computed at run time)", c.cmd.ProgramWord.Match)
	case kindPath:
		p := c.path.Resolved
		if p == "" {
			p = c.path.Lexical
		}
		if p == "" {
			p = c.path.Raw
		}
		return fmt.Sprintf("%s %q", c.path.Kind, p)
	}
	switch {
	case c.url == nil:
		return "the host of an unparsable URL"
	case c.url.Host != "":
		return "host " + c.url.Host
	}
	return fmt.Sprintf("the host of %q", c.url.Raw)
}

// less orders contributions for reporting
// (docs/design/checks.md#policy-precedence (3)): explicit rules before
// defaults, then command, path, domain, then file order. It depends only on
// the rules themselves, so it is the same whatever order the items were
// visited in.
func (c contribution) less(o contribution) bool {
	if (c.r == nil) != (o.r == nil) {
		return c.r != nil
	}
	if c.kind != o.kind {
		return c.kind < o.kind
	}
	return c.r != nil && c.r.index < o.r.index
}

// evaluation accumulates the restrictive decisions of one step.
type evaluation struct {
	denies    []contribution // items whose decision is deny
	approvals []contribution // items whose decision is require_approval
	exec      *verdict.Verdict
}

// decide records one item's decision: the most restrictive matching rule,
// or the default when none matches (docs/design/checks.md#policy-precedence
// (1)).
func (ev *evaluation) decide(p *Policy, item contribution, matched []*rule) {
	best := verdict.Allow
	for _, r := range matched {
		if r.decision.Rank() > best.Rank() {
			best = r.decision
		}
	}
	if len(matched) == 0 {
		best = p.defaults[item.kind]
		c := item
		switch best {
		case verdict.Deny:
			ev.denies = append(ev.denies, c)
		case verdict.RequireApproval:
			ev.approvals = append(ev.approvals, c)
		}
		return
	}
	// Every matching rule with the item's decision is a reason for it; an
	// allow rule never outweighs a deny rule, whatever the order.
	for _, r := range matched {
		if r.decision != best {
			continue
		}
		c := item
		c.r = r
		switch best {
		case verdict.Deny:
			ev.denies = append(ev.denies, c)
		case verdict.RequireApproval:
			ev.approvals = append(ev.approvals, c)
		}
	}
}

// Evaluate runs the policy check on the view of one step
// (docs/design/checks.md#policy-precedence) and returns its verdict: deny,
// require_approval (with the gates to open), or allow. A nil policy allows
// with the message "no policy loaded".
func (p *Policy) Evaluate(v *tripwire.View) verdict.Verdict {
	if p == nil {
		return verdict.New(verdict.CheckPolicy, verdict.Allow, verdict.OK, "no policy loaded")
	}
	if v == nil || v.Intent == nil {
		// The pipeline always builds a view; without one nothing can be
		// shown to be allowed.
		return verdict.Denial(verdict.CheckPolicy, verdict.CheckInternalError, "policy: no intent view to evaluate")
	}
	a := v.Intent.Action
	// Action checks come first: no rule can allow a forbidden action.
	if slices.Contains(p.forbidden, a) {
		return verdict.Denial(verdict.CheckPolicy, verdict.PolicyActionForbidden,
			fmt.Sprintf("action %q is forbidden by policy %s", a, p.name)).WithRule("forbidden_actions")
	}
	if !slices.Contains(p.allowed, a) {
		return verdict.Denial(verdict.CheckPolicy, verdict.PolicyActionNotAllowed,
			fmt.Sprintf("action %q is not in allowed_actions of policy %s", a, p.name)).WithRule("allowed_actions")
	}
	var ev evaluation
	switch a {
	case intent.RunCommand:
		p.evalCommands(&ev, v.Command)
		p.evalPaths(&ev, v.Paths)
	case intent.ReadFile, intent.WriteFile:
		p.evalPaths(&ev, v.Paths)
	case intent.HTTPGet:
		p.evalDomain(&ev, v.URL)
	}
	return p.verdict(&ev)
}

// evalCommands applies the command rules and executables to every simple
// command of the analysis, derived commands included. A script the
// analysis rejected has no commands; the tripwire denies it.
func (p *Policy) evalCommands(ev *evaluation, a *shell.Analysis) {
	if a == nil {
		return
	}
	var matched []*rule
	for i := range a.Commands {
		c := &a.Commands[i]
		if c.AssignOnly {
			continue // X=1: no program runs
		}
		name := programName(c, p.fold)
		args, argsDone := "", false
		matched = matched[:0]
		for k := range p.commandRules {
			r := &p.commandRules[k]
			if !programMatch(r.programs, r.anyProg, c, name) {
				continue
			}
			if r.args != nil {
				if !argsDone {
					args, argsDone = strings.Join(c.ArgMatches(), " "), true
				}
				if !r.args.MatchString(args) {
					continue
				}
			}
			if !r.test.Empty() && !r.test.Match(c, nil) {
				continue
			}
			matched = append(matched, &r.rule)
		}
		ev.decide(p, contribution{kind: kindCommand, cmd: c}, matched)
		if ev.exec == nil && p.executables != nil {
			ev.exec = p.checkExecutable(a, c, name)
		}
	}
}

// checkExecutable applies the executables allowlist to one command.
// Shell builtins that the tripwire always permits and functions the script
// defines are not executables: the commands inside a function are checked
// themselves.
func (p *Policy) checkExecutable(a *shell.Analysis, c *shell.Command, name string) *verdict.Verdict {
	if c.Dynamic {
		// Whatever runs is decided at run time, so no list can admit it.
		v := verdict.Denial(verdict.CheckPolicy, verdict.PolicyDynamicProgram, "program cannot be determined statically").WithRule("executables")
		return &v
	}
	if slices.Contains(tripwire.AlwaysPermitted, name) || slices.Contains(a.Functions, c.Program) {
		return nil
	}
	for i := range p.exeGlobs {
		if p.exeGlobs[i].match(name) {
			return nil
		}
	}
	v := verdict.Denial(verdict.CheckPolicy, verdict.PolicyExecutableNotAllowed,
		fmt.Sprintf("program %q is not in policy executables", c.Program)).WithRule("executables")
	return &v
}

var pathKindBits = map[tripwire.PathKind]pathKinds{
	tripwire.KindReadFile: pkReadFile, tripwire.KindRedirectRead: pkRedirectRead, tripwire.KindRedirectWrite: pkRedirectWrite,
	tripwire.KindWriteFile: pkWriteFile,
}

// evalPaths applies the path rules to the read_file path or the
// redirection targets.
func (p *Policy) evalPaths(ev *evaluation, paths []tripwire.PathView) {
	var matched []*rule
	for i := range paths {
		pv := &paths[i]
		bit := pathKindBits[pv.Kind]
		cands, n := p.pathCandidates(pv)
		matched = matched[:0]
		for k := range p.pathRules {
			r := &p.pathRules[k]
			if r.kinds&bit != 0 && r.matches(cands[:n]) {
				matched = append(matched, &r.rule)
			}
		}
		ev.decide(p, contribution{kind: kindPath, path: pv}, matched)
	}
}

func (r *pathRule) matches(cands []string) bool {
	for _, s := range cands {
		for _, g := range r.globs {
			if g.match(s) {
				return true
			}
		}
		for _, pre := range r.prefixes {
			if prefixMatch(pre, s) {
				return true
			}
		}
	}
	return false
}

// evalDomain applies the domain rules to the http_get host.
func (p *Policy) evalDomain(ev *evaluation, u *tripwire.URLView) {
	var matched []*rule
	host, isIP := "", false
	if u != nil {
		host, isIP = u.Host, u.IP.IsValid()
	}
	for k := range p.domainRules {
		r := &p.domainRules[k]
		if r.matchesHost(host, isIP) || r.matchesCIDR(u) {
			matched = append(matched, &r.rule)
		}
	}
	ev.decide(p, contribution{kind: kindDomain, url: u}, matched)
}

func (r *domainRule) matchesHost(host string, isIP bool) bool {
	if host == "" {
		return false
	}
	for _, h := range r.hosts {
		if hostMatch(h, host, isIP) {
			return true
		}
	}
	return false
}

func (r *domainRule) matchesCIDR(u *tripwire.URLView) bool {
	if len(r.cidrs) == 0 {
		return false
	}
	switch cidrTest(r.cidrs, u) {
	case cidrYes:
		return true
	case cidrUnknown:
		// Resolution failed, so the host might be anywhere: a deny or
		// approval rule matches (fail closed), but an allow rule cannot use
		// the unknown to lift a default deny.
		return r.decision != verdict.Allow
	}
	return false
}

var ruleCodes = [numKinds]verdict.Code{verdict.PolicyCommandRule, verdict.PolicyPathRule, verdict.PolicyDomainRule}

// verdict turns the accumulated decisions into the step verdict: the most
// restrictive across items and executables
// (docs/design/checks.md#policy-precedence (2)), reported in the order of
// docs/design/checks.md#policy-precedence (3).
func (p *Policy) verdict(ev *evaluation) verdict.Verdict {
	if len(ev.denies) > 0 {
		first := ev.denies[0]
		for _, c := range ev.denies[1:] {
			if c.less(first) {
				first = c
			}
		}
		if first.r != nil {
			reason := first.r.reason
			if reason == "" {
				reason = fmt.Sprintf("%s is denied by policy %s", first.item(), p.name)
			}
			return verdict.Denial(verdict.CheckPolicy, ruleCodes[first.kind], fmt.Sprintf("rule %s: %s", first.r.id, reason)).WithRule(first.r.id)
		}
		if ev.exec != nil {
			return *ev.exec
		}
		return verdict.Denial(verdict.CheckPolicy, verdict.PolicyDefaultDeny,
			fmt.Sprintf("no %s rule allows %s", first.kind, first.item())).WithRule(first.kind.defaultKey())
	}
	if ev.exec != nil {
		return *ev.exec
	}
	if len(ev.approvals) == 0 {
		return verdict.Pass(verdict.CheckPolicy)
	}
	first := ev.approvals[0]
	named := map[string]bool{}
	implicit := false
	for _, c := range ev.approvals {
		if c.less(first) {
			first = c
		}
		if c.r != nil && c.r.gate != "" {
			named[c.r.gate] = true
		} else {
			implicit = true
		}
	}
	// Gates in file order, the implicit gate last: the same set and order
	// whatever the order of the rules that named them.
	var gates []string
	for _, g := range p.gates {
		if named[g.ID] {
			gates = append(gates, g.ID)
		}
	}
	if implicit {
		gates = append(gates, DefaultGateID)
	}
	id := p.defaultsID(first)
	v := verdict.New(verdict.CheckPolicy, verdict.RequireApproval, verdict.PolicyRequiresApproval,
		fmt.Sprintf("rule %s requires approval (gates: %s)", id, joinIDs(gates))).WithRule(id)
	v.Gates = gates
	return v
}

// defaultsID names the deciding rule, or the default key for a default.
func (p *Policy) defaultsID(c contribution) string {
	if c.r != nil {
		return c.r.id
	}
	return c.kind.defaultKey()
}
