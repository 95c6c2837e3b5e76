package sandbox

import (
	"strconv"
	"strings"
)

// StderrSeparator is the line between stdout and stderr in an observation.
const StderrSeparator = "--- stderr ---"

// Headline is the first line of the observation
// (docs/design/sandbox.md#sandbox-result): "[exit N]", "[signal NAME]",
// "[timeout after N s]" or "[sandbox aborted: reason]".
func (r Result) Headline() string {
	switch {
	case r.Status == StatusAborted:
		reason := r.Reason
		if reason == "" {
			reason = "unknown reason"
		}
		return "[sandbox aborted: " + reason + "]"
	case r.Status == StatusTimeout:
		d := r.Limit
		if d <= 0 {
			d = r.Duration
		}
		return "[timeout after " + strconv.FormatInt(int64(d.Seconds()), 10) + " s]"
	case r.Signal != "":
		return "[signal " + r.Signal + "]"
	case r.ExitCode != nil:
		return "[exit " + strconv.Itoa(*r.ExitCode) + "]"
	}
	return "[sandbox aborted: no exit status]"
}

// Observation composes the text the agent sees from the result
// (docs/design/sandbox.md#sandbox-result): the headline; then each of
// IronVise's notes ([Result.Notes]: the memory hint, the explanation of a
// failure the sandbox's rules caused) on a line "[sandbox: …]"; then
// stdout, then — if stderr is non-empty — a line "--- stderr ---" and
// stderr. The notes come right after the headline so that no cut of a long
// output can drop them, and the streams follow unchanged. The streams are
// already capped; the scanner (docs/design/checks.md#output-scanner) runs
// on this text afterwards. Without the workspace only relative paths count
// as the workspace's: ObservationIn knows it.
func (r Result) Observation() string { return r.ObservationIn("") }

// ObservationIn is Observation for a command that ran in workspace.
func (r Result) ObservationIn(workspace string) string {
	var b strings.Builder
	b.Grow(len(r.Stdout) + len(r.Stderr) + 512)
	b.WriteString(r.Headline())
	b.WriteByte('\n')
	for _, note := range r.Notes(workspace) {
		b.WriteString("[sandbox: ")
		b.WriteString(note)
		b.WriteString("]\n")
	}
	b.WriteString(r.Stdout)
	if r.Stderr != "" {
		if r.Stdout != "" && !strings.HasSuffix(r.Stdout, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(StderrSeparator)
		b.WriteByte('\n')
		b.WriteString(r.Stderr)
	}
	return b.String()
}

// SuggestedMemMiB is the ECTO_SANDBOX_MEM_MIB the memory hint suggests at
// least: enough for the Go toolchain, Node.js and the JVM to start.
const SuggestedMemMiB = 4096

// memoryMarkers are what programs print when the address-space limit
// (RLIMIT_AS) stops them, compared case-insensitively.
var memoryMarkers = []string{
	"failed to reserve page summary memory",    // a Go program at start
	"out of memory",                            // Go's "fatal error: out of memory", V8's "JavaScript heap out of memory", awk, perl's "Out of memory!"
	"fatal process oom",                        // V8 failing to reserve its code range at start
	"cannot allocate memory",                   // strerror(ENOMEM): mmap, the dynamic loader, fork
	"failed to map segment from shared object", // the dynamic loader
	"memoryerror",                              // Python
	"memory exhausted",                         // bash's xmalloc, gcc's "virtual memory exhausted"
	"could not reserve enough space",           // the JVM's heap
	"std::bad_alloc",                           // C++
	"memory allocation of",                     // Rust's "memory allocation of N bytes failed"
}

// MemoryHint returns one sentence naming ECTO_SANDBOX_MEM_MIB when a command
// of the native Linux tier failed (a non-zero exit or a signal) and its
// output reads like running out of memory: the per-process address-space
// limit (512 MiB by default) stops the Go toolchain, Node.js and the JVM
// at start, and the agent or operator would otherwise read their messages
// as a bug of the program. It returns "" for every other result, including
// a command that succeeded whatever it printed. The text is a guess from
// the output, worded as one.
func (r Result) MemoryHint() string {
	if r.Tier != TierNativeLinux || r.Status != StatusOK || r.Enforced == nil || r.Enforced.RLimits == nil {
		return ""
	}
	mib := r.Enforced.RLimits.ASMiB
	if mib <= 0 || (r.Signal == "" && (r.ExitCode == nil || *r.ExitCode == 0)) {
		return ""
	}
	if !mentionsMemory(r.Stderr) && !mentionsMemory(r.Stdout) {
		return ""
	}
	suggest := SuggestedMemMiB
	if mib >= suggest {
		suggest = 2 * mib
	}
	return "the command seems to have run out of address space under ECTO_SANDBOX_MEM_MIB=" + strconv.Itoa(mib) +
		"; raise it, for example ECTO_SANDBOX_MEM_MIB=" + strconv.Itoa(suggest)
}

// mentionsMemory reports whether s contains one of memoryMarkers.
func mentionsMemory(s string) bool {
	if s == "" {
		return false
	}
	s = strings.ToLower(s)
	for _, m := range memoryMarkers {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
