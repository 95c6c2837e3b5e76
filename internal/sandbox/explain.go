package sandbox

import (
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// A command that fails because of the sandbox's own rules prints what any
// program prints — "Read-only file system", "Operation not permitted",
// "not found" — and an agent (or a person) reads it as a bug of the
// command or of the host. Explain adds IronVise's one line saying which
// rule it was and where the command can write, but only when the evidence
// holds: the command failed, its output carries the error the rule
// produces, and the tier is one that enforces that rule. Anything else
// (a failing test, a missing file, a grep without a match) gets no
// explanation. The command's own output is never changed.

// Explain returns IronVise's one-line explanation of how the sandbox's
// rules made the command fail, or "" when the result gives no evidence of
// that. workspace is the host directory the command ran in ("" when not
// known: only relative paths then count as the workspace's).
func (r Result) Explain(workspace string) string {
	if !r.failedConfined() {
		return ""
	}
	var why string
	switch {
	case r.ExitCode != nil && *r.ExitCode == 127:
		why = r.missingTool()
	case r.ExitCode != nil && *r.ExitCode == 126:
		why = r.execDenied(workspace)
	}
	if why == "" {
		why = r.writeDenied(workspace)
	}
	if why == "" {
		why = r.callDenied()
	}
	if why == "" {
		return ""
	}
	return why + "; " + r.writableHint()
}

// Notes are IronVise's lines about a result, in observation order: the
// memory hint, then the explanation; none for most results.
func (r Result) Notes(workspace string) []string {
	var out []string
	for _, n := range []string{r.MemoryHint(), r.Explain(workspace)} {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// failedConfined reports a command that ran under a tier's rules (not
// permissive, not aborted, not cut off by the timeout) and failed.
func (r Result) failedConfined() bool {
	if r.Status != StatusOK || r.Tier == TierNone || r.Enforced == nil {
		return false
	}
	return r.Signal == "" && r.ExitCode != nil && *r.ExitCode != 0
}

// writableHint says where the command can write: its scratch directory
// ($TMPDIR), removed when it ends. The workspace is read-only in every
// tier (the self-test refuses a tier where it is not).
func (r Result) writableHint() string {
	where := "$TMPDIR"
	if d := r.Enforced.ScratchDir; d != "" {
		where += " (" + d + ")"
	}
	return "the command can write only under " + where + ", which is removed when it ends"
}

// outputLines are the lines of stderr, then stdout (a command may send its
// errors to either, 2>&1 included).
func (r Result) outputLines() []string {
	return strings.Split(r.Stderr+"\n"+r.Stdout, "\n")
}

// notFoundRe matches a shell's "command not found" line and captures the
// name: dash ("sh: 1: foo: not found"), bash ("bash: foo: command not
// found", "bash: line 1: foo: command not found"), busybox ("sh: foo: not
// found").
var notFoundRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[\w./-]*sh)(?:: line \d+| *: \d+)?: ([^\s:]+): (?:command )?not found$`)
})

// missingTool explains exit 127 with a shell's "not found": the tier runs
// commands with a fixed PATH, so a tool installed outside it is not found
// even when the host has it.
func (r Result) missingTool() string {
	for _, line := range r.outputLines() {
		m := notFoundRe().FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		name := m[1]
		if strings.Contains(name, "/") {
			return strconv.Quote(name) + " does not exist inside the sandbox, which sees only the workspace, the scratch directory and the system directories"
		}
		return strconv.Quote(name) + " is not on the sandbox's PATH (" + r.pathHint() + "): a tool installed elsewhere on the host (under $HOME, /opt, a version manager) is not visible there, and one not installed at all is missing in the sandbox too"
	}
	return ""
}

// pathHint names the PATH the tier gives commands.
func (r Result) pathHint() string {
	if r.Tier == TierNativeLinux {
		return CommandPath()
	}
	return "the standard system directories"
}

// permissionDeniedRe matches a shell's refusal to execute a file:
// "sh: 1: ./build.sh: Permission denied".
var permissionDeniedRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(?:[\w./-]*sh)(?:: line \d+| *: \d+)?: ([^\s:]+): Permission denied$`)
})

// execDenied explains exit 126 when the native Linux tier refused to
// execute a program of the workspace or the scratch directory: Landlock
// lets commands execute only from the system directories.
func (r Result) execDenied(workspace string) string {
	if r.Tier != TierNativeLinux {
		return ""
	}
	for _, line := range r.outputLines() {
		m := permissionDeniedRe().FindStringSubmatch(strings.TrimSpace(line))
		if m == nil || underExecRoot(m[1]) || !strings.Contains(m[1], "/") {
			continue
		}
		return "the sandbox executes programs only from " + strings.Join(execRoots, ", ") + ", not from the workspace or $TMPDIR: run a script through its interpreter (sh " + m[1] + ", python3 " + m[1] + ")"
	}
	return ""
}

// writeVerbs are what tools print before a path they could not write
// (coreutils, shells, git, Python's OSError): a "Permission denied" counts
// as the sandbox's only after one of them, because reading a file of the
// workspace is allowed and fails only on the file's own permissions.
var writeVerbs = []string{"cannot create", "cannot touch", "cannot remove", "cannot move", "cannot make", "can't create", "unable to create", "changing permissions", "changing ownership", "failed to create", "could not create"}

// writeDenied explains a write the sandbox refused: "Read-only file
// system" naming a path of the workspace (or, in the native Linux tier,
// any path: everything but the scratch directory is mounted read-only),
// or "Permission denied" after a write verb naming a path of the
// workspace.
func (r Result) writeDenied(workspace string) string {
	for _, line := range r.outputLines() {
		lower := strings.ToLower(line)
		erofs := strings.Contains(lower, "read-only file system")
		eacces := strings.Contains(lower, "permission denied") && containsAny(lower, writeVerbs)
		if !erofs && !eacces {
			continue
		}
		if r.inWorkspace(line, workspace) {
			return "the workspace is read-only inside the sandbox, so writing there fails"
		}
		if erofs && r.Tier == TierNativeLinux {
			return "the sandbox mounts everything read-only except the command's scratch directory, so writing there fails"
		}
	}
	return ""
}

// callDenied explains "Operation not permitted" in a tier that installs
// a seccomp filter and drops every capability: both answer EPERM, the
// filter for sockets, namespaces, mounts, ptrace and the like.
func (r Result) callDenied() string {
	if r.Enforced.SeccompProfileSHA256 == "" {
		return ""
	}
	for _, line := range r.outputLines() {
		if strings.Contains(strings.ToLower(line), "operation not permitted") {
			return "the sandbox refused an operation: its system-call filter answers \"Operation not permitted\" to sockets, namespaces (unshare), mount, ptrace and similar calls, and the command runs without capabilities"
		}
	}
	return ""
}

// absPathRe finds the absolute paths in a line: a slash at the start of a
// word or right after a quote.
var absPathRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:^|[\s'"‘“` + "`" + `(])(/[^\s'"’”:)]*)`)
})

// inWorkspace reports whether an error line names a path of the workspace:
// the workspace's own absolute path (or /workspace, where a container
// mounts it), or only relative paths, which resolve in the workspace, the
// directory the command starts in.
func (r Result) inWorkspace(line, workspace string) bool {
	paths := absPathRe().FindAllStringSubmatch(line, -1)
	if len(paths) == 0 {
		return true
	}
	for _, m := range paths {
		// The paths are the command's own words, POSIX paths in every tier
		// that explains (a container's too, whatever the host): cleaned
		// with package path, not the host's filepath.
		p := path.Clean(m[1])
		if workspace != "" && (p == workspace || strings.HasPrefix(p, workspace+"/")) {
			return true
		}
		if (r.Tier == TierDocker || r.Tier == TierPodman) && (p == "/workspace" || strings.HasPrefix(p, "/workspace/")) {
			return true
		}
	}
	return false
}

func containsAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
