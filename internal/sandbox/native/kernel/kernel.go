// Package kernel holds every raw Linux system call of the native sandbox
// tier: thin typed wrappers that return syscall.Errno values, so the policy
// code in sandbox/native never calls unix.Syscall itself and the errors it
// reports keep the kernel's errno (STYLE practice 3).
//
// # Threads
//
// Credentials, capabilities, no_new_privs and seccomp filters are per
// thread in Linux, while the Go runtime is multithreaded. execve takes the
// credentials of the calling thread and destroys every other thread, so the
// launcher locks one OS thread for the whole sequence, changes that
// thread's capabilities (cheap, one syscall each) and execs from it; the
// seccomp filter is installed on every thread with SECCOMP_FILTER_FLAG_TSYNC
// and Landlock on every thread by go-landlock, so no thread of the launcher
// is ever less confined than the one that becomes the command. UID changes
// go through Go's syscall package, which applies them to all threads.
//
// # Limitations
//
// Linux only. On other systems every wrapper returns ENOSYS: nothing that
// enforces a sandbox may silently succeed there.
package kernel
