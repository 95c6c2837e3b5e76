// Package kernel holds every raw Linux system call of the native sandbox
// tier: thin typed wrappers that return syscall.Errno values, so the policy
// code in sandbox/native never calls unix.Syscall itself and the errors it
// reports keep the kernel's errno (STYLE practice 3).
//
// # Threads
//
// Credentials, capabilities, no_new_privs and seccomp filters are per
// thread in Linux, while the Go runtime is multithreaded. The wrappers whose
// names start with AllThreads apply the call to every thread of the process
// (through libcap's psx, which also works with cgo); the seccomp filter is
// installed with SECCOMP_FILTER_FLAG_TSYNC. Callers still lock the OS thread
// around the whole sequence, because execve takes the credentials of the
// calling thread.
//
// # Limitations
//
// Linux only. On other systems every wrapper returns ENOSYS: nothing that
// enforces a sandbox may silently succeed there.
package kernel
