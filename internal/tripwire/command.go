package tripwire

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Flags the tripwire attaches to an allow (docs/design/checks.md#flags).
const (
	FlagDynamicProgram = "dynamic_program"
	FlagScriptFile     = "script_file"
)

// alwaysPermittedTarget reports the redirection targets that are not files
// of the host: the null device and the process's own standard streams.
func alwaysPermittedTarget(v string) bool {
	switch v {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/stdin":
		return true
	}
	if n, ok := strings.CutPrefix(v, "/dev/fd/"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		return true
	}
	return false
}

// redirectViews computes the path views of a script's file redirections.
// A target that cannot be resolved statically is dynamic, unless it names a
// protected path in every way it could be read (`< ~/.netrc`).
func (t *Tripwire) redirectViews(v *View) []PathView {
	a := v.Command
	scan := t.newScan(v)
	var out []PathView
	for _, r := range a.Redirects {
		kind := KindRedirectRead
		switch r.Kind {
		case shell.RedirRead:
		case shell.RedirWrite:
			kind = KindRedirectWrite
		default:
			continue
		}
		switch {
		case r.TmpDir && !a.AssignsTmpDir:
			out = append(out, PathView{Kind: kind, Raw: r.Target.Match, Scratch: true})
		case !r.Target.Static:
			if h := scan.wordHit(r.Target); h != nil {
				out = append(out, PathView{Kind: kind, Raw: r.Target.Match, Problem: h.at(r.Target.Match)})
				continue
			}
			out = append(out, PathView{Kind: kind, Raw: r.Target.Match, Dynamic: true})
		case alwaysPermittedTarget(r.Target.Value):
		case a.ChangesDir && !filepath.IsAbs(r.Target.Value):
			if h := scan.wordHit(r.Target); h != nil {
				out = append(out, PathView{Kind: kind, Raw: r.Target.Value, Problem: h.at(r.Target.Value)})
				continue
			}
			// After a cd the shell resolves a relative target against a
			// directory this check cannot know.
			out = append(out, PathView{Kind: kind, Raw: r.Target.Value, Dynamic: true})
		default:
			out = append(out, t.pathView(kind, r.Target.Value))
		}
	}
	if scan.over {
		out = append(out, PathView{Kind: KindRedirectRead, Problem: tooComplex()})
	}
	return out
}

// checkCommand applies docs/design/checks.md#tripwire-commands in its order:
// parse, complexity, script-level rules, per-command rules in source order,
// redirections.
func (t *Tripwire) checkCommand(v *View) verdict.Verdict {
	a := v.Command
	deny := func(code verdict.Code, format string, args ...any) verdict.Verdict {
		return verdict.Denial(verdict.CheckTripwire, code, fmt.Sprintf(format, args...))
	}
	if a.ParseError != nil {
		return deny(verdict.CmdUnparseable, "not a POSIX sh script: %v", a.ParseError)
	}
	// Zero-width and bidi control characters make the script a reviewer
	// reads differ from the one the shell runs ("Trojan Source").
	if r, i, found := invisibleRune(a.Source); found {
		return deny(verdict.CmdUnparseable, "not a POSIX sh script: invisible or bidi control character %U at byte %d", r, i)
	}
	if a.TooComplex != "" {
		return deny(verdict.CmdTooComplex, "%s", a.TooComplex)
	}
	for _, c := range a.Commands {
		// curl … | sh, sh <<EOF, sh /dev/stdin, bash /proc/self/fd/0: the
		// program the interpreter runs is data that no check has seen.
		if c.StdinProgram && (c.PipePos > 0 || c.StdinRedirected) {
			return deny(verdict.CmdInterpreterStdin, "%q would run code read from stdin", c.Program)
		}
		if c.StdinFile {
			return deny(verdict.CmdInterpreterStdin, "%q would run code read from a file descriptor (/dev/stdin, /dev/fd/N, /proc/*/fd/N or -)", c.Program)
		}
	}
	if a.DownloadExec != "" {
		return deny(verdict.CmdDownloadExec, "downloaded content executed via %s", a.DownloadExec)
	}
	if a.RecursiveFunction != "" {
		return deny(verdict.CmdRecursiveFunction, "%s", a.RecursiveFunction)
	}
	for _, lv := range a.LoopVars {
		if slices.Contains(EnvOverrideNames, lv.Name) {
			return deny(verdict.CmdEnvOverride, "assignment to %s is not allowed", lv.Name).WithRule("for")
		}
	}
	for _, as := range a.ExpansionAssigns {
		// `: ${LD_PRELOAD:=x}` and $((IFS=0)) assign as surely as LD_PRELOAD=x.
		if slices.Contains(EnvOverrideNames, as.Name) {
			return deny(verdict.CmdEnvOverride, "assignment to %s (by %s) is not allowed", as.Name, as.Form)
		}
	}
	var flags []string
	forms := t.operandForms(v)
	allowlistOn := t.cfg.ExecutableAllowlist != nil
	unreviewed := func(u *unreviewed) (verdict.Verdict, bool) {
		if u.code != verdict.CmdDynamicProgram || !t.cfg.AllowDynamicPrograms || allowlistOn {
			msg := "code read from stdin: " + u.why
			if u.code == verdict.CmdDynamicProgram {
				msg = "program cannot be determined statically: " + u.why
			}
			return deny(u.code, "%s", msg), true
		}
		flags = append(flags, FlagDynamicProgram)
		return verdict.Verdict{}, false
	}
	for i := range a.Commands {
		c := &a.Commands[i]
		if vd, denied := t.checkOne(a, c, forms); denied {
			return vd
		}
		if vd, denied := t.checkNetwork(c); denied {
			return vd
		}
		if u := t.scriptFinding(v, c); u != nil {
			if vd, denied := unreviewed(u); denied {
				return vd
			}
		}
		if c.Dynamic {
			flags = append(flags, FlagDynamicProgram)
		}
		if c.ScriptFile {
			flags = append(flags, FlagScriptFile)
		}
	}
	for _, f := range a.ConfigFiles {
		if u := t.fileOrigin(v, f); u != nil {
			u.why = fmt.Sprintf("configuration file %s: %s", quote(f.Match), u.why)
			if vd, denied := unreviewed(u); denied {
				return vd
			}
		}
	}
	// Security: a word that names a protected path is refused even when
	// no rule above knows the program: `cat ~/.ssh/id_ed25519`, `tar c
	// $HOME/.aws`, `cd ~ && cat .netrc`.
	if p := t.protectedWords(v); p != nil {
		return verdict.Denial(verdict.CheckTripwire, p.Code, p.Message)
	}
	for _, pv := range v.Paths {
		if pv.Problem != nil && pv.Problem.Code == verdict.PathProtected {
			return verdict.Denial(verdict.CheckTripwire, pv.Problem.Code, pv.Problem.Message)
		}
	}
	for _, pv := range v.Paths {
		if pv.Dynamic {
			return deny(verdict.RedirectDynamic, "redirection target %s cannot be determined statically", quote(pv.Raw))
		}
		if p := t.checkPath(pv); p != nil {
			return verdict.Denial(verdict.CheckTripwire, p.Code, p.Message)
		}
	}
	return verdict.Pass(verdict.CheckTripwire).WithFlags(flags...)
}

// checkOne applies step 4 to one simple command: banned program, env
// override, banned args, allowlist, dynamic.
func (t *Tripwire) checkOne(a *shell.Analysis, c *shell.Command, forms func(shell.Word) []string) (verdict.Verdict, bool) {
	deny := func(code verdict.Code, format string, args ...any) (verdict.Verdict, bool) {
		return verdict.Denial(verdict.CheckTripwire, code, fmt.Sprintf(format, args...)), true
	}
	fold := t.foldCase
	if !c.Dynamic && c.Program != "" {
		if t.bannedNames[t.nameKey(c.Program)] || t.bannedGlobs.Match(c.Program, fold) {
			return deny(verdict.CmdBannedProgram, "program %q is banned", c.Program)
		}
	}
	for _, as := range c.Assigns {
		// PATH, LD_PRELOAD, IFS and friends change which binary runs or
		// what code it loads, behind every other rule's back.
		if slices.Contains(EnvOverrideNames, as.Name) {
			return deny(verdict.CmdEnvOverride, "assignment to %s is not allowed", as.Name)
		}
	}
	if c.AssignOnly {
		return verdict.Verdict{}, false
	}
	if !c.Dynamic {
		// The rules for this name and the glob rules, in file order: the
		// first rule that fires is the one reported.
		named, globs := t.rulesByName[t.nameKey(c.Program)], t.ruleGlobs
		for len(named) > 0 || len(globs) > 0 {
			var k int
			if len(globs) == 0 || len(named) > 0 && named[0] < globs[0] {
				k, named = named[0], named[1:]
			} else {
				k, globs = globs[0], globs[1:]
				if !t.cfg.BannedArgRules[k].prog.Match(c.Program, fold) {
					continue
				}
			}
			r := &t.cfg.BannedArgRules[k]
			if r.fires(c, forms) {
				vd, d := deny(verdict.CmdBannedArgs, "rule %s matched for %q", r.ID, c.Program)
				return vd.WithRule(r.ID), d
			}
		}
	}
	allowlistOn := t.cfg.ExecutableAllowlist != nil
	if allowlistOn && !c.Dynamic && !t.allowlisted(a, c.Program) {
		return deny(verdict.CmdNotAllowlisted, "program %q is not in the executable allowlist", c.Program)
	}
	if c.Dynamic && (!t.cfg.AllowDynamicPrograms || allowlistOn) {
		// A program name computed at run time ($(printf rm) -rf /, eval)
		// is the classic way around static rules; with an allowlist it
		// could be anything outside it.
		return deny(verdict.CmdDynamicProgram, "program cannot be determined statically: %s", c.DynamicReason)
	}
	return verdict.Verdict{}, false
}

func (t *Tripwire) allowlisted(a *shell.Analysis, prog string) bool {
	if slices.Contains(AlwaysPermitted, prog) || slices.Contains(a.Functions, prog) {
		return true
	}
	return t.cfg.allowlist.Match(prog, t.foldCase)
}

// invisibleRune finds the first zero-width or bidi control character.
func invisibleRune(s string) (rune, int, bool) {
	for i, r := range s {
		switch {
		case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069,
			r == 0x2060, r == 0xFEFF, r == 0x00AD, r == 0x180E:
			return r, i, true
		}
	}
	return 0, 0, false
}

// indexRules builds the lookups of banned programs and argument rules.
func (t *Tripwire) indexRules() {
	t.bannedNames = map[string]bool{}
	for _, g := range t.cfg.banned {
		if names, ok := g.Literals(t.foldCase); ok {
			for _, n := range names {
				t.bannedNames[n] = true
			}
			continue
		}
		t.bannedGlobs = append(t.bannedGlobs, g)
	}
	t.rulesByName = map[string][]int{}
	for i := range t.cfg.BannedArgRules {
		names, ok := t.cfg.BannedArgRules[i].prog.Literals(t.foldCase)
		if !ok {
			t.ruleGlobs = append(t.ruleGlobs, i)
			continue
		}
		for _, n := range names {
			if l := t.rulesByName[n]; len(l) == 0 || l[len(l)-1] != i {
				t.rulesByName[n] = append(l, i)
			}
		}
	}
}

// nameKey is a program name as the indexes hold it.
func (t *Tripwire) nameKey(p string) string {
	if t.foldCase {
		return strings.ToLower(p)
	}
	return p
}
