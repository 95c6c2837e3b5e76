//go:build !unix && !windows

package sandbox

import "os/exec"

func shellArgv(command string) []string { return []string{"/bin/sh", "-c", command} }

func killTree(cmd *exec.Cmd) {}
