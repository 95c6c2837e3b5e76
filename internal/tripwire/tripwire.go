// Package tripwire is check 3 of the pipeline: the structural rules on
// commands, paths and URLs (docs/design/checks.md#tripwire), configured by
// tripwire.json.
//
// # What it guarantees
//
// Commands are parsed as POSIX sh (package shell) and checked per program
// and per argument word, never by raw substring: `sudo` is caught as
// `"su""do"`, `s\udo`, `/usr/bin/sudo`, inside `$(…)`, a function, `sh -c`,
// `env`, `timeout`, `find -exec` or `busybox`, while `grep sudo notes.txt`
// passes. Option rules read options as the program does (package shell's
// option model: `curl -d@f`, `nc -e/bin/sh`, `rm --recur`). A program
// computed at run time is denied by default, and so is a script that the
// same command writes first or that lies where commands write (scratch, a
// writable root); an interpreter reading a file descriptor reads stdin.
// Paths are
// resolved component by component against roots resolved once at load, so
// a symlink cannot lead a read or a redirection out of the workspace.
// Protected paths (IronVise's data directory, every home's credential
// stores, the operator's protected_paths) are refused wherever they appear:
// read_file, redirections, and every command word that may name a file —
// with ~ and $HOME expanded to every home, globs and the directories a cd
// can reach taken into account. URLs must be https to an allowed domain
// (label-boundary match), without userinfo or IP literals, and must resolve
// to public addresses only, also through every IPv4-in-IPv6 embedding
// (NAT64, 6to4, Teredo, …; see Embedded). In proxy mode
// (Options.Egress) the destinations commands name — curl, wget, git, pip
// and npm URLs — are judged by the egress proxy's allow list, and one the
// proxy would refuse is refused with the proxy's code and message.
//
// # Usage
//
//	cfg, _ := tripwire.LoadConfig(filepath.Join(dataDir, "tripwire.json"), tripwire.LoadOptions{Workspace: ws})
//	list, _ := secretpaths.Compute(…) // with cfg.ProtectedPaths among its Extra
//	tw := tripwire.New(cfg, tripwire.Options{Workspace: ws, Protected: list})
//	view := tw.View(ctx, in)   // shared with the policy check
//	v := tw.Check(view)        // verdict.Verdict, check "tripwire"
//
// # Limitations
//
// The analysis is static: it cannot see what a script reads at run time
// (arguments xargs takes from stdin, files a program opens, a path built
// from variables or command substitutions, the items of a for loop). The
// sandbox is the layer that confines those, and it hides the same
// protected paths.
package tripwire

import (
	"context"
	"net"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/secretpaths"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Options are the inputs of a Tripwire besides its Config.
type Options struct {
	// Workspace is the session workspace, absolute and symlink-resolved.
	Workspace string
	// Protected is the protected-path list the composition root computed
	// with secretpaths.Compute (the sandbox hides the same paths). A path
	// action or a command word that names one of its paths, or anything
	// below one, is denied with path_protected.
	Protected secretpaths.List
	// FS and Resolver default to the OS and net.DefaultResolver.
	FS       FS
	Resolver Resolver
	// Egress, when set, is the allow list of proxy mode
	// (ECTO_SANDBOX_NETWORK=proxy): the hosts and addresses a command
	// names (curl, wget, git, pip, npm) are judged by it as the egress
	// proxy judges them. nil is mode none: commands have no network and
	// their destinations are not judged here.
	Egress EgressRules
	// GOOS selects platform rules (case folding, drive letters, "\"); it
	// defaults to runtime.GOOS and exists so that the darwin and windows
	// rules are tested on Linux.
	GOOS string
}

// Tripwire evaluates intents against one Config. It is safe for
// concurrent use.
type Tripwire struct {
	cfg       *Config
	workspace string
	fs        FS
	resolver  Resolver
	egress    EgressRules
	overlay   OverlayChanged // nil: ro mode (overlay.go)
	foldCase  bool
	windows   bool
	shellOpt  shell.Options
	// protected holds Protected.Paths keyed for lookup (lowercased where
	// names fold), so a path is checked by walking its ancestors.
	protected map[string]string
	list      secretpaths.List
	// Banned programs and argument rules indexed by program name (folded
	// where names fold), with the rules whose program glob has
	// metacharacters apart: every command is checked against them, and
	// most commands match none.
	bannedNames map[string]bool
	bannedGlobs shell.GlobSet
	rulesByName map[string][]int
	ruleGlobs   []int
}

// New returns a Tripwire for cfg.
func New(cfg *Config, opt Options) *Tripwire {
	t := &Tripwire{cfg: cfg, workspace: filepath.Clean(opt.Workspace), fs: opt.FS, resolver: opt.Resolver, egress: nilIfTypedNil(opt.Egress)}
	if t.fs == nil {
		t.fs = OSFS{}
	}
	if t.resolver == nil {
		t.resolver = net.DefaultResolver
	}
	goos := opt.GOOS
	if goos == "" {
		goos = runtime.GOOS
	}
	t.foldCase = goos == "darwin" || goos == "windows"
	t.windows = goos == "windows"
	t.shellOpt = shell.Options{FoldCase: t.foldCase}
	t.indexRules()
	t.list = opt.Protected
	t.protected = protectedIndex(opt.Protected.Paths, t.foldCase)
	return t
}

// lastProtected is the lookup map of the last protected list a tripwire
// was made with. A daemon makes one tripwire per command with the same
// list, hundreds to thousands of paths, and building the map was about
// 0.2 ms of every command's start in serve (docs/operate/performance.md);
// comparing the list with a copy of the last one costs a few microseconds
// (the strings share their bytes). The map is only read once built, so
// tripwires share it.
var lastProtected struct {
	mu    sync.Mutex
	paths []string
	fold  bool
	m     map[string]string
}

// protectedIndex is paths keyed for lookup (lowercased where names fold),
// each key naming its entry.
func protectedIndex(paths []string, fold bool) map[string]string {
	lp := &lastProtected
	lp.mu.Lock()
	defer lp.mu.Unlock()
	if lp.m != nil && lp.fold == fold && slices.Equal(lp.paths, paths) {
		return lp.m
	}
	m := make(map[string]string, len(paths))
	for _, p := range paths {
		m[pathKey(filepath.Clean(p), fold)] = p
	}
	// A copy: a caller that changes its slice afterwards must not find
	// the map of the old list.
	lp.paths, lp.fold, lp.m = slices.Clone(paths), fold, m
	return m
}

// WithEgress returns a copy of t that judges command destinations by r
// (see Options.Egress); nil turns that off. A session whose policy
// narrows the allow list passes the narrowed rules here, so the tripwire
// and the session's proxy decide by the same list.
func (t *Tripwire) WithEgress(r EgressRules) *Tripwire {
	c := *t
	c.egress = nilIfTypedNil(r)
	return &c
}

// Egress returns the allow list command destinations are judged by, nil
// in mode none.
func (t *Tripwire) Egress() EgressRules { return t.egress }

// Config returns the configuration the tripwire enforces.
func (t *Tripwire) Config() *Config { return t.cfg }

// Protected returns the protected-path list the tripwire enforces.
func (t *Tripwire) Protected() secretpaths.List { return t.list }

// View is the intent view computed once after the schema check and shared
// by the policy and tripwire checks (docs/design/checks.md#check-order).
type View struct {
	Intent *intent.Intent
	// Command is the analysis of a run_command script.
	Command *shell.Analysis
	// Paths holds the read_file or write_file path, or the redirection targets of a
	// run_command in source order (targets without a file are omitted).
	Paths []PathView
	// URL is the http_get URL.
	URL *URLView

	// cwds are the directories a run_command script may run in (the
	// workspace and the targets of its cd commands); cwdKnown is false
	// when a cd target is computed at run time.
	cwds     []string
	cwdKnown bool
}

// View computes the intent view. It never fails: problems are recorded in
// the view and reported by Check.
func (t *Tripwire) View(ctx context.Context, in *intent.Intent) *View {
	v := &View{Intent: in}
	switch in.Action {
	case intent.RunCommand:
		v.Command = shell.Analyze(in.Command, t.shellOpt)
		v.cwds, v.cwdKnown = t.cwds(v.Command)
		v.Paths = t.redirectViews(v)
	case intent.ReadFile:
		v.Paths = []PathView{t.pathView(KindReadFile, in.Path)}
	case intent.WriteFile:
		v.Paths = []PathView{t.pathView(KindWriteFile, in.Path)}
	case intent.HTTPGet:
		v.URL = t.urlView(ctx, in.URL)
	}
	return v
}

// Check runs the tripwire on a view and returns its verdict: the first
// failure in the order of docs/design/checks.md#tripwire-commands, or allow
// (with the flags dynamic_program and script_file when they apply).
func (t *Tripwire) Check(v *View) verdict.Verdict {
	switch v.Intent.Action {
	case intent.RunCommand:
		return t.checkCommand(v)
	case intent.ReadFile, intent.WriteFile:
		if p := t.checkPath(v.Paths[0]); p != nil {
			return verdict.Denial(verdict.CheckTripwire, p.Code, p.Message)
		}
	case intent.HTTPGet:
		if p := v.URL.Problem; p != nil {
			return verdict.Denial(verdict.CheckTripwire, p.Code, p.Message)
		}
	}
	return verdict.Pass(verdict.CheckTripwire)
}
