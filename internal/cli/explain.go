package cli

import (
	"fmt"
	"io"
)

// printSandboxNotes writes IronVise's notes on a command's run (the memory
// hint, the explanation of a failure the sandbox's rules caused) after the
// command's own output, each on its own line and marked as IronVise's, so
// that nobody takes them for something the command printed.
func printSandboxNotes(w io.Writer, prefix string, notes []string) {
	for _, n := range notes {
		fmt.Fprintf(w, "%s%s\n", prefix, n)
	}
}
