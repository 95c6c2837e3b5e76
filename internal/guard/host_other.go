//go:build !linux

package guard

import (
	"errors"
	"fmt"
	"runtime"
	"syscall"
)

// workerSysProcAttr has no parent-death signal outside Linux; Close and the
// worker's exit on stdin EOF end the worker.
func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// softwareEnclaveSupported fails closed: the worker's hardening and the
// host's checks of it are Linux-only.
func softwareEnclaveSupported() error {
	return fmt.Errorf("guard: the software enclave is not available on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// checkWorkerProcess fails closed outside Linux.
func checkWorkerProcess(int) ([]string, error) { return nil, softwareEnclaveSupported() }
