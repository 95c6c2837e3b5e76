//go:build !unix

package sandbox

import "os"

// ProcessOutcome returns the exit code; there are no signals to report.
func ProcessOutcome(ps *os.ProcessState) (exitCode *int, signal string) {
	code := ps.ExitCode()
	return &code, ""
}
