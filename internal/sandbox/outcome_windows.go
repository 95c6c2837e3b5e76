//go:build windows

package sandbox

import "os/exec"

// shellArgv is the argv that runs command with cmd.exe.
func shellArgv(command string) []string { return []string{"cmd.exe", "/C", command} }

// killTree: cancellation kills the shell; the native Windows tier uses a
// Job Object to take the whole tree down.
func killTree(cmd *exec.Cmd) {}
