// Package seccomp generates the seccomp-BPF allowlists of IronVise: the
// profile of the native Linux sandbox tier's commands
// (docs/design/sandbox.md#linux-native-tier) and the profile the guard worker
// confines itself with (docs/design/agent.md#guard-worker). It only builds
// the programs; installing them is package sandbox/native/kernel's job.
//
// # Policy
//
// Each filter is an allowlist. In evaluation order:
//
//  1. the architecture must be the native one, else the process is killed
//     (a foreign ABI such as i386 via int 0x80 or x32 syscall numbers would
//     otherwise reach syscalls under numbers the filter never checked);
//  2. the [AlwaysDenied] syscalls fail with EPERM — clone3 with ENOSYS so
//     that libc falls back to clone, whose flags a classic BPF filter can
//     inspect (clone3 passes them in memory, out of reach);
//  3. a few syscalls are allowed only with safe arguments ([ArgChecked],
//     [HTTPSClientArgChecked]);
//  4. the plain allowlist ([Allowed], [HTTPSClientAllowed]) is allowed;
//  5. everything else fails with EPERM, so a tool prints "Operation not
//     permitted" instead of dying mysteriously.
//
// A syscall has exactly one rule, so the order of 2–4 is a matter of
// documentation: the program finds the rule by a binary search over the
// syscall number (about ten comparisons instead of one per listed syscall),
// which keeps both the kernel's per-syscall evaluation and its one-off
// analysis of the filter at install time short.
//
// # The command profile
//
// It allows what ordinary work needs — shells, coreutils, git, make, gcc,
// python3 and its venv, node, the go command — and no more:
//
//   - files and descriptors of every kind, their metadata included
//     (Landlock and the read-only mounts decide which files);
//   - memory, threads, processes (fork, vfork, clone without namespace
//     flags), exec, waiting, signals, timers, polling;
//   - the set*id family: under no_new_privs, with every capability set
//     empty and the securebits locked, the kernel lets a process switch
//     only among the ids it already holds, so make's seteuid works and
//     nothing is gained;
//   - sync, syncfs, ionice's ioprio calls (which reach only the command's
//     own PID namespace) and memory protection keys;
//   - socketpair for an AF_UNIX SOCK_STREAM pair only, with
//     SOCK_NONBLOCK and SOCK_CLOEXEC.
//
// It allows no socket(2) of any family, AF_UNIX included, and no bind,
// listen, connect or accept (Landlock cannot confine connecting to a
// pathname Unix socket before ABI 9, and a host daemon behind one is an
// escape). A datagram or seqpacket socketpair is refused because an
// AF_UNIX datagram socket reaches any pathname socket with sendto or
// sendmsg, no connect needed, and SCM_RIGHTS would hand the daemon there
// open descriptors; a connected stream socket refuses an address
// (EISCONN).
//
// # The proxy-mode command profile
//
// [BuildProxy] is the command profile plus what a TCP client needs, for
// commands run in proxy mode (docs/reference/sandboxing.md#network-egress),
// whose network namespace holds only loopback and the egress proxy's
// listener on it: socket(2) for AF_INET or AF_INET6 with SOCK_STREAM (with
// SOCK_NONBLOCK and SOCK_CLOEXEC) and protocol 0 or IPPROTO_TCP, and
// connect(2) ([ProxyAllowed]; the send, receive, shutdown and socket-option
// calls are in the command profile already). Still refused: every other
// family and type (AF_UNIX, AF_NETLINK, raw, packet, UDP: names are
// resolved by the proxy, so a DNS query fails at once), bind, listen,
// accept and accept4. A server inside the sandbox would be harmless on a
// loopback of its own, but no command needed one in mode none, and the
// port of the proxy must stay the proxy's; Landlock (ABI 4 or newer)
// allows connect to the proxy's port only.
//
// The HTTPS-client profile allows TCP and UDP sockets of AF_INET and
// AF_INET6 only, threads but no new processes, no exec, and signals to its
// own process only.
//
//	p, err := seccomp.Build()                       // a sandboxed command
//	x, err := seccomp.BuildProxy()                  // one in proxy mode
//	p.SHA256                                        // recorded with every command
//	q, err := seccomp.BuildHTTPSClient(os.Getpid()) // the guard worker
//
// # Limitations
//
// Only linux/amd64 and linux/arm64 are supported; elsewhere the builders
// return an error wrapping errors.ErrUnsupported. The ioctl check only stops
// the two terminal-injection requests; other device ioctls are confined by
// Landlock (ABI ≥ 5) and by the sandbox having no terminal at all. A filter
// cannot read memory, so connect(2) is not checked by address: the
// HTTPS-client profile relies on its caller for where it connects.
package seccomp

import "slices"

// AlwaysDenied are refused even if someone widens the allowlist: debugging
// and memory access across processes, io_uring (which bypasses seccomp),
// BPF and perf, userfaultfd (a race amplifier for kernel exploits), the
// keyring, every mount API, namespaces, kexec and modules, file handles
// (open_by_handle_at walks outside any path-based confinement), and a few
// host-administration calls.
func AlwaysDenied() []string { return slices.Clone(alwaysDenied) }

// Allowed is the plain allowlist (the argument-checked syscalls excluded).
func Allowed() []string { return slices.Clone(allowed) }

// ArgChecked names the syscalls allowed only with checked arguments: clone
// without namespace flags, ioctl but TIOCSTI and TIOCLINUX, socketpair for
// an AF_UNIX stream pair only, prlimit64 on the caller itself.
func ArgChecked() []string { return []string{"clone", "ioctl", "socketpair", "prlimit64"} }

// ProxyAllowed are the calls the proxy-mode profile ([BuildProxy]) allows
// besides the command profile's, socket(2) aside (argument-checked, see
// [ProxyArgChecked]).
func ProxyAllowed() []string { return slices.Clone(proxyAllowed) }

// ProxyArgChecked names the syscalls the proxy-mode profile allows only
// with checked arguments: socket for TCP over IPv4 and IPv6 only.
func ProxyArgChecked() []string { return []string{"socket"} }

var proxyAllowed = []string{"connect"}

// GroupDenied are the calls every container-mode profile ([BuildContainer])
// refuses: leaving the command's process group. In container mode the
// command has no PID namespace whose end kills everything in it; its
// reaper kills the command's process group with one kill(-pgid), which
// also reaches a child being forked at that moment, so that a fork bomb
// cannot outrun it. A process that called setsid or setpgid would be
// outside that group, left to the reaper's one-by-one kills, which a fork
// bomb can outrun on a loaded machine.
func GroupDenied() []string { return []string{"setsid", "setpgid"} }

// MetadataDenied are the calls the ownerless profile (BuildContainer(true))
// refuses: changing a file's mode, owner or extended attributes. The
// kernel allows them to a file's owner without any capability, and
// Landlock does not govern them; where no read-only mount stands in the
// way, a command running as uid 0 could make any root-owned file setuid
// or world-writable. Besides these, the utime family is allowed only to
// set the times to now (touch), not to a chosen time.
func MetadataDenied() []string { return slices.Clone(metadataDenied) }

var metadataDenied = []string{
	"chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
	"setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
	"setxattrat", "removexattrat",
}

// metadataNowOnly maps the utime calls to the argument holding their times
// pointer, which must be NULL in the ownerless profile.
var metadataNowOnly = map[string]uint32{"utime": 1, "utimes": 1, "utimensat": 2, "futimesat": 2}

// HTTPSClientAllowed is the plain allowlist of the HTTPS-client profile.
func HTTPSClientAllowed() []string { return slices.Clone(httpsClientAllowed) }

// HTTPSClientArgChecked names the syscalls the HTTPS-client profile allows
// only with checked arguments: clone for threads only, socket for TCP and
// UDP over IPv4 and IPv6 only, kill and tgkill to the process itself only.
func HTTPSClientArgChecked() []string { return []string{"clone", "socket", "kill", "tgkill"} }

var alwaysDenied = []string{
	"ptrace", "process_vm_readv", "process_vm_writev", "io_uring_setup", "io_uring_enter",
	"io_uring_register", "bpf", "perf_event_open", "userfaultfd", "keyctl", "add_key",
	"request_key", "mount", "umount2", "pivot_root", "fsopen", "fsconfig", "fsmount", "fspick",
	"move_mount", "open_tree", "open_tree_attr", "mount_setattr", "unshare", "setns",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"open_by_handle_at", "name_to_handle_at", "clone3", "pidfd_getfd", "process_madvise", "kcmp",
	"swapon", "swapoff", "reboot", "acct", "syslog", "iopl", "ioperm", "modify_ldt", "chroot",
	"personality", "quotactl", "lookup_dcookie", "uselib", "vhangup", "memfd_secret",
}

// allowed is wide enough for sh, coreutils, grep, find, awk, sed, git,
// perl, python3 and its venv, make, gcc, node and the go command (tested
// through the tier in internal/sandbox/native/work_linux_test.go and
// internal/sandbox/native/toolchain_linux_test.go). The file-metadata calls
// (chmod, chown, utimensat, *xattr) are allowed because Landlock does not
// govern them: the tier mounts everything but the scratch directory
// read-only, which is what stops them outside it.
var allowed = []string{
	"read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2",
	"pwritev2", "open", "openat", "openat2", "creat", "close", "close_range", "lseek", "fstat",
	"stat", "lstat", "newfstatat", "statx", "fstatfs", "statfs", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getdents", "getdents64", "getcwd", "chdir", "fchdir",
	"mkdir", "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2", "link",
	"linkat", "symlink", "symlinkat", "truncate", "ftruncate", "fallocate", "fsync", "fdatasync",
	"sync_file_range", "flock", "fcntl", "dup", "dup2", "dup3", "pipe", "pipe2", "mknod",
	"mknodat", "umask", "utime", "utimes", "utimensat", "futimesat", "chmod", "fchmod",
	"fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat", "getxattr", "lgetxattr",
	"fgetxattr", "listxattr", "llistxattr", "flistxattr", "setxattr", "lsetxattr", "fsetxattr",
	"removexattr", "lremovexattr", "fremovexattr", "getxattrat", "listxattrat", "setxattrat",
	"removexattrat", "sendfile", "copy_file_range", "splice", "tee", "fadvise64", "readahead",
	"inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch", "brk", "mmap",
	"munmap", "mremap", "mprotect", "madvise", "msync", "mincore", "membarrier", "rseq",
	"set_robust_list", "set_tid_address", "futex", "futex_waitv", "arch_prctl", "prctl",
	"sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam",
	"sched_getscheduler", "sched_get_priority_max", "sched_get_priority_min",
	"sched_rr_get_interval", "getpriority", "setpriority", "getrandom", "fork", "vfork", "execve",
	"execveat", "exit", "exit_group", "wait4", "waitid", "kill", "tkill", "tgkill",
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigtimedwait",
	"rt_sigsuspend", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "sigaltstack", "restart_syscall",
	"pause", "alarm", "getitimer", "setitimer", "nanosleep", "clock_nanosleep", "clock_gettime",
	"clock_getres", "gettimeofday", "time", "times", "getpid", "getppid", "gettid", "getuid",
	"geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups", "getpgid", "getpgrp",
	"getsid", "setpgid", "setsid", "uname", "sysinfo", "getrlimit", "setrlimit", "getrusage",
	"capget", "getcpu", "timer_create", "timer_settime", "timer_gettime", "timer_getoverrun",
	"timer_delete", "timerfd_create", "timerfd_settime", "timerfd_gettime", "eventfd", "eventfd2",
	"signalfd", "signalfd4", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
	"epoll_pwait", "epoll_pwait2", "poll", "ppoll", "select", "pselect6", "pidfd_open",
	"pidfd_send_signal", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg",
	"shutdown", "getsockname", "getpeername", "getsockopt", "setsockopt",
	// Security: the set*id family. GNU make resets its effective uid to
	// its real one before it starts a job (seteuid, which glibc makes
	// setresuid(-1, uid, -1); refused, every recipe fails with "make:
	// echo: Operation not permitted"), and apt and servers drop to
	// another user. None of them can gain anything here: the launcher
	// has set no_new_privs, emptied every capability set, the bounding
	// set included, and locked the securebits
	// (internal/sandbox/native/launch/launcher_linux.go). Without
	// CAP_SETUID and CAP_SETGID the kernel only lets a process choose
	// among the real, effective and saved ids it already holds, and
	// refuses setgroups outright; no_new_privs keeps a setuid binary
	// from adding a saved id. So uid 0 without capabilities cannot
	// become another user and no other user can become uid 0. capset
	// stays denied.
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid",
	"setfsgid",
	// sync and syncfs (coreutils' sync, Python's os.sync, package
	// managers): they only start writeback of what the kernel already
	// holds dirty, read nothing and change no file; the host I/O they
	// cause is no more than the command could cause by writing.
	"sync", "syncfs",
	// Security: ionice. Without CAP_SYS_ADMIN or CAP_SYS_NICE the
	// kernel grants the best-effort and idle classes only, to processes
	// of the caller's own uid, and IOPRIO_WHO_PGRP and IOPRIO_WHO_USER
	// reach only processes visible in the caller's PID namespace, which
	// holds the command alone: the reach of setpriority, allowed above.
	"ioprio_get", "ioprio_set",
	// Memory protection keys: like mprotect they change only the
	// caller's access to its own pages (V8 write-protects its compiled
	// code with them where the CPU has them).
	"pkey_alloc", "pkey_free", "pkey_mprotect",
}

// httpsClientAllowed is what a Go program needs to talk HTTPS to a model
// API and nothing more: the runtime (memory, threads, signals, timers, the
// network poller), reading files (Landlock decides which: TLS roots,
// resolv.conf, hosts, zoneinfo), writing to descriptors it already holds
// (its protocol pipes; Landlock forbids writing files), and client sockets
// (connect, send, receive; no bind, listen or accept). execve, fork and
// every process-inspection call are absent. It was derived from tracing the
// guard worker through DNS over UDP and TCP, HTTP and HTTPS requests (see
// the tests of ConfineSelf in sandbox/native).
var httpsClientAllowed = []string{
	// Files and descriptors (read side, governed by Landlock).
	"read", "readv", "pread64", "preadv", "preadv2", "open", "openat", "openat2", "close", "close_range",
	"lseek", "fstat", "stat", "lstat", "newfstatat", "statx", "fstatfs", "statfs", "access", "faccessat",
	"faccessat2", "readlink", "readlinkat", "getdents64", "getcwd", "fcntl", "dup", "dup3",
	"pipe2", "fadvise64",
	// Writing to descriptors already open (stdout, stderr, sockets).
	"write", "writev", "pwrite64",
	// Memory.
	"brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore",
	// Threads, scheduling, time.
	"futex", "set_robust_list", "rseq", "set_tid_address", "arch_prctl", "sched_yield",
	"sched_getaffinity", "gettid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid",
	"nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
	"getrandom", "uname", "exit", "exit_group", "restart_syscall",
	// Signals (delivery to the process itself: tgkill and kill are
	// argument-checked).
	"rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "sigaltstack",
	// The network poller.
	"epoll_create1", "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd2", "poll", "ppoll",
	// Client sockets.
	"connect", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown",
	"getsockname", "getpeername", "getsockopt", "setsockopt",
}
