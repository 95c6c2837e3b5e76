//go:build !linux

package guard

import "os/exec"

// asNobody is Linux-only; the tests that use it are too.
func asNobody(*exec.Cmd) {}

// execMain is Linux-only.
func execMain([]string) int { return 2 }

// ptraceMain is Linux-only.
func ptraceMain([]string) int { return 2 }

// sleepMain is Linux-only.
func sleepMain() int { return 2 }
