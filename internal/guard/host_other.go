//go:build !linux

package guard

import "syscall"

// workerSysProcAttr has no parent-death signal outside Linux; Close and the
// worker's exit on stdin EOF end the worker.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }
