package guard

import "syscall"

// workerSysProcAttr makes the kernel kill the worker when the host dies, so
// a crashed host leaves no guard process holding a key. (Pdeathsig follows
// the thread that started the child; the Go runtime only retires threads
// that exit locked, which this package never does.)
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
