//go:build linux

package native

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// escapeCase is one attempt to get out of the sandbox. check asserts
// containment from the host's side where it can (the file is unchanged, the
// listener got nothing, the process is alive), and from the output
// otherwise.
type escapeCase struct {
	name  string
	key   bool     // also run unprivileged (TestEscapeSuiteAsUser, TestUnprivileged)
	tools []string // programs the attempt needs
	cmd   func(fx *fixture) string
	mod   func(*sandbox.Request)
	check func(t *testing.T, fx *fixture, r sandbox.Result)
}

const py3 = "/usr/bin/python3"

// escapeCases returns the suite. Host-side listeners and processes are
// created per test and torn down with it.
func escapeCases(t *testing.T) []escapeCase {
	tcp, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tcp.Close() })
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	abstract := fmt.Sprintf("ironvise-escape-%d", time.Now().UnixNano())
	al, err := net.Listen("unix", "@"+abstract)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	port := func(a net.Addr) string { s := a.String(); return s[strings.LastIndexByte(s, ':')+1:] }
	noAccept := func(t *testing.T, l net.Listener) {
		t.Helper()
		l.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(50 * time.Millisecond))
		if c, err := l.Accept(); err == nil {
			c.Close()
			t.Fatal("a connection from the sandbox reached the host listener")
		}
	}
	denied := func(t *testing.T, r sandbox.Result, errs ...string) {
		t.Helper()
		if strings.Contains(r.Stdout, "OK") {
			t.Fatalf("the kernel allowed it:\n%s", r.Observation())
		}
		for _, e := range errs {
			if strings.Contains(r.Stdout, "ERR "+e+" ") || strings.Contains(r.Stdout, "ERR "+e+"\n") {
				return
			}
		}
		if len(errs) > 0 {
			t.Fatalf("want a refusal with one of %v:\n%s", errs, r.Observation())
		}
	}
	eperm := strconv.Itoa(int(syscall.EPERM))

	return []escapeCase{
		{name: "write_in_workspace", key: true,
			cmd: func(fx *fixture) string { return "echo pwned > pwned.txt; echo more >> README" },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				absent(t, filepath.Join(fx.ws, "pwned.txt"))
				unchanged(t, filepath.Join(fx.ws, "README"), "line one\nline two needle\nline three\n")
			}},
		{name: "write_outside", key: true,
			cmd: func(fx *fixture) string { return "echo pwned > " + fx.out + "/new.txt; cp README " + fx.out + "/" },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				absent(t, fx.out+"/new.txt")
				absent(t, fx.out+"/README")
			}},
		{name: "create_dir_outside",
			cmd:   func(fx *fixture) string { return "mkdir " + fx.out + "/d; mkfifo " + fx.out + "/f" },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { absent(t, fx.out+"/d"); absent(t, fx.out+"/f") }},
		{name: "rename_outside",
			cmd: func(fx *fixture) string {
				return "mv " + fx.victim + " " + fx.out + "/moved.txt; mv " + fx.victim + " $TMPDIR/"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				unchanged(t, fx.victim, fx.victimText)
				absent(t, fx.out+"/moved.txt")
			}},
		{name: "truncate_outside", key: true,
			cmd: func(fx *fixture) string {
				return "truncate -s 0 " + fx.victim + "; : > " + fx.victim + "; echo x >> " + fx.victim
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { unchanged(t, fx.victim, fx.victimText) }},
		{name: "delete_outside",
			cmd:   func(fx *fixture) string { return "rm -f " + fx.victim + "; rm -rf " + fx.out },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { unchanged(t, fx.victim, fx.victimText) }},
		{name: "chmod_chown_touch_outside", key: true,
			cmd: func(fx *fixture) string {
				return "chmod 4777 " + fx.victim + " " + fx.secret + "; chown 65534 " + fx.victim + "; touch -d 2001-01-01 " + fx.victim +
					"; setfattr -n user.x -v y " + fx.victim + " 2>&1"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				for _, p := range []string{fx.victim, fx.secret} {
					fi, err := os.Stat(p)
					if err != nil {
						t.Fatal(err)
					}
					if fi.Mode()&os.ModeSetuid != 0 || fi.Mode().Perm() == 0o777 {
						t.Fatalf("%s mode changed to %v", p, fi.Mode())
					}
					if fi.ModTime().Year() == 2001 {
						t.Fatalf("%s mtime changed", p)
					}
				}
				var st syscall.Stat_t
				if err := syscall.Stat(fx.victim, &st); err == nil && st.Uid == 65534 && os.Geteuid() != 65534 {
					t.Fatal("victim owner changed")
				}
			}},
		{name: "symlink_escape", key: true,
			cmd: func(fx *fixture) string {
				return "ln -s " + fx.victim + " $TMPDIR/l && echo pwned > $TMPDIR/l; ln -s " + fx.secret + " $TMPDIR/s && cat $TMPDIR/s; " +
					"ln -s " + fx.out + " $TMPDIR/d && echo pwned > $TMPDIR/d/via-link"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				unchanged(t, fx.victim, fx.victimText)
				absent(t, fx.out+"/via-link")
				noLeak(t, r, fx.secretText)
			}},
		{name: "hardlink_escape", key: true,
			cmd: func(fx *fixture) string {
				return "ln " + fx.victim + " $TMPDIR/h && echo pwned > $TMPDIR/h; ln " + fx.secret + " $TMPDIR/s2 && cat $TMPDIR/s2"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				unchanged(t, fx.victim, fx.victimText)
				noLeak(t, r, fx.secretText)
				var st syscall.Stat_t
				if err := syscall.Stat(fx.victim, &st); err != nil || st.Nlink != 1 {
					t.Fatalf("victim link count %d (%v): a hard link was made", st.Nlink, err)
				}
			}},
		{name: "read_ssh_key", key: true,
			cmd: func(fx *fixture) string {
				return "cat " + fx.home + "/.ssh/id_ed25519; cat ~/.ssh/id_* /root/.ssh/* 2>&1"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { noLeak(t, r, fx.secretText) }},
		{name: "read_and_list_outside_roots", key: true,
			cmd: func(fx *fixture) string {
				return "cat " + fx.secret + "; ls -la " + fx.out + " " + fx.base + "; head -c 100 /sys/kernel/notes /var/log/* /home/* /root/* 2>&1; grep -r secret- /tmp /var /home /root 2>/dev/null"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				noLeak(t, r, fx.secretText)
				noLeak(t, r, "victim.txt")
			}},
		{name: "read_etc_shadow", key: true,
			cmd: func(fx *fixture) string {
				return "cat /etc/shadow /etc/gshadow /etc/sudoers 2>&1; echo; grep -c : /etc/shadow"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				if strings.Contains(r.Stdout, "root:") {
					t.Fatalf("/etc/shadow readable:\n%s", r.Observation())
				}
			}},
		{name: "proc_parent_and_init_environ_mem", key: true,
			cmd: func(fx *fixture) string {
				pid := strconv.Itoa(os.Getpid())
				return "cat /proc/" + pid + "/environ /proc/" + pid + "/cmdline; dd if=/proc/" + pid + "/mem bs=1 count=1 2>&1; tr '\\0' '\\n' < /proc/1/environ; ls /proc | grep -c '^[0-9]'"
			},
			mod: func(r *sandbox.Request) { r.Env = []string{"IRONVISE_ESCAPE_MARK=x"} },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				// The test process's own environment carries PATH and HOME
				// of the host; its argv carries -test.run.
				noLeak(t, r, "-test.")
				noLeak(t, r, "IRONVISE_ESCAPE_MARK")
				if n := strings.TrimSpace(r.Stdout[strings.LastIndexByte(strings.TrimSpace(r.Stdout), '\n')+1:]); n != "" {
					if c, err := strconv.Atoi(n); err == nil && c > 20 {
						t.Fatalf("/proc shows %d processes: the host's PID namespace is visible", c)
					}
				}
			}},
		{name: "secrets_in_environment", key: true,
			cmd: func(fx *fixture) string { return "env; cat /proc/self/environ" },
			mod: func(r *sandbox.Request) {
				r.Env = []string{"OPENAI_API_KEY=sk-escape-test-key", "AWS_SECRET_ACCESS_KEY=aws-escape-test", "DATABASE_URL=postgres://u:p@h/db",
					"LD_PRELOAD=/tmp/evil.so", "SSH_AUTH_SOCK=/tmp/agent", "LANG=C.UTF-8", "TZ=UTC"}
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				for _, s := range []string{"sk-escape-test-key", "aws-escape-test", "postgres://", "evil.so", "SSH_AUTH_SOCK"} {
					noLeak(t, r, s)
				}
				contains(t, r, "TZ=UTC")
				// The test process's own environment must not pass either.
				noLeak(t, r, "GOROOT=")
			}},
		{name: "inherited_fd", key: true,
			cmd: func(fx *fixture) string {
				return "ls -l /proc/self/fd/; " + fx.py("readfd", "{{FD}}") + "; cat /proc/self/fd/{{FD}}"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				noLeak(t, r, fx.secretText)
			}},
		{name: "tcp_connect", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("tcp", "127.0.0.1", port(tcp.Addr())) + "; " + fx.py("tcp", "1.1.1.1", "443")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm); noAccept(t, tcp) }},
		{name: "udp_dns", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("udp", "127.0.0.1", port(udp.LocalAddr())) + "; getent hosts example.com; " + fx.py("udp", "8.8.8.8", "53")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				denied(t, r, eperm)
				udp.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
				if _, _, err := udp.ReadFrom(make([]byte, 512)); err == nil {
					t.Fatal("a datagram from the sandbox reached the host")
				}
			}},
		{name: "listen", tools: []string{py3},
			cmd:   func(fx *fixture) string { return fx.py("listen", "0") },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "abstract_unix_socket", key: true, tools: []string{py3},
			cmd:   func(fx *fixture) string { return fx.py("unix", "@"+abstract) },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm); noAccept(t, al) }},
		{name: "pathname_unix_socket", tools: []string{py3},
			cmd: func(fx *fixture) string {
				// A host daemon's socket inside the readable workspace.
				return fx.py("unix", "{{SOCK}}")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "ptrace", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("ptrace", nr(t, "ptrace")) + "; " + fx.py("syscall", nr(t, "ptrace"), "0", "0", "0", "0")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "process_vm_readv", tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("syscall", nr(t, "process_vm_readv"), strconv.Itoa(os.Getpid()), "0", "0", "0", "0", "0")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "io_uring_setup", tools: []string{py3},
			cmd:   func(fx *fixture) string { return fx.py("syscall", nr(t, "io_uring_setup"), "8", "0") },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "bpf", tools: []string{py3},
			cmd:   func(fx *fixture) string { return fx.py("syscall", nr(t, "bpf"), "0", "0", "0") },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "perf_event_open", tools: []string{py3},
			cmd:   func(fx *fixture) string { return fx.py("syscall", nr(t, "perf_event_open"), "0", "0", "-1", "-1", "0") },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "userfaultfd_keyctl_open_by_handle", tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("syscall", nr(t, "userfaultfd"), "0") + "; " + fx.py("syscall", nr(t, "keyctl"), "0", "0") + "; " +
					fx.py("syscall", nr(t, "add_key"), "0", "0", "0", "0", "0") + "; " + fx.py("syscall", nr(t, "open_by_handle_at"), "3", "0", "0")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { denied(t, r, eperm) }},
		{name: "mount", key: true,
			cmd: func(fx *fixture) string {
				return "mount -t tmpfs none $TMPDIR 2>&1; mount --bind " + fx.out + " $TMPDIR 2>&1; echo pwned > $TMPDIR/x; umount /proc 2>&1; ls " + fx.out
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) { absent(t, fx.out+"/x"); noLeak(t, r, "victim.txt") }},
		{name: "unshare_namespaces", key: true,
			cmd: func(fx *fixture) string {
				return "unshare -n true && echo NET-OK; unshare -U true && echo USER-OK; unshare -Ur id && echo MAPROOT-OK; unshare -m true && echo MNT-OK; unshare -p -f true && echo PID-OK"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				for _, s := range []string{"NET-OK", "USER-OK", "MAPROOT-OK", "MNT-OK", "PID-OK"} {
					noLeak(t, r, s)
				}
			}},
		{name: "clone_with_namespace_flags_and_clone3", tools: []string{py3},
			cmd: func(fx *fixture) string {
				// clone(CLONE_NEWUSER|SIGCHLD): EPERM. clone3: ENOSYS so
				// that libc falls back to clone.
				return fx.py("syscall", nr(t, "clone"), strconv.Itoa(syscall.CLONE_NEWUSER|int(syscall.SIGCHLD)), "0", "0", "0", "0") + "; " +
					fx.py("syscall", nr(t, "clone3"), "0", "0")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				denied(t, r)
				contains(t, r, "ERR "+eperm)
				contains(t, r, "ERR "+strconv.Itoa(int(syscall.ENOSYS)))
			}},
		{name: "tiocsti", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				// On /dev/null the ioctl would fail with ENOTTY; EPERM is
				// the filter. The second form sets the upper 32 bits, which
				// the kernel ignores and a 64-bit compare would miss.
				return fx.py("tiocsti", nr(t, "ioctl"), "0x5412") + "; " + fx.py("tiocsti", nr(t, "ioctl"), "0xffffffff00005412") + "; " +
					fx.py("tiocsti", nr(t, "ioctl"), "0x541C")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				if got := strings.Count(r.Stdout, "ERR "+eperm+" "); got != 3 {
					t.Fatalf("want 3 EPERM refusals, got %d:\n%s", got, r.Observation())
				}
			}},
		{name: "kill_parent_and_unrelated_process", key: true,
			cmd: func(fx *fixture) string {
				return "kill -9 {{SLEEPER}}; kill -TERM " + strconv.Itoa(os.Getpid()) + "; kill -9 -1; " + fx.py("kill", "{{SLEEPER}}", "9")
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {}},
		{name: "fork_bomb", key: true,
			// The marker of this run, in every bomb process's command
			// line, keeps the survivor scan below from counting the bombs
			// of another test binary running on the same host.
			cmd: func(fx *fixture) string {
				return ": " + filepath.Base(fx.base) + "; b() { b | b & }; b; sleep 2; echo SURVIVED-THE-BOMB"
			},
			mod:   func(r *sandbox.Request) { r.Timeout = 5 * time.Second; r.Limits.NProc = 64 },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {}},
		{name: "memory_hog", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("memhog", "1024") + "; head -c 600000000 /dev/zero | sort > /dev/null; echo rc=$?"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				denied(t, r, "MemoryError")
				noLeak(t, r, "rc=0")
			}},
		{name: "cpu_spin", key: true,
			cmd: func(fx *fixture) string { return "while :; do :; done" },
			// The wall-clock timeout is far above the CPU limit, so only
			// the CPU limit can end the loop (even on a loaded machine).
			mod: func(r *sandbox.Request) { r.Limits.CPUSecs = 1; r.Timeout = 60 * time.Second },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				if r.Status != sandbox.StatusOK || (r.Signal != "SIGKILL" && r.Signal != "SIGXCPU") {
					t.Fatalf("want the CPU limit to kill the loop, got %s (%s)", r.Headline(), r.Status)
				}
			}},
		{name: "fd_exhaustion", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string { return fx.py("fds") },
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				f := strings.Fields(r.Stdout)
				if len(f) < 3 || f[0] != "OK" || f[2] != "EMFILE" {
					t.Fatalf("want EMFILE:\n%s", r.Observation())
				}
				if n, _ := strconv.Atoi(f[1]); n > 64 {
					t.Fatalf("opened %d descriptors with a limit of 64", n)
				}
			}},
		{name: "detached_background_process", key: true,
			cmd: func(fx *fixture) string {
				return "setsid sleep {{MARK}} </dev/null >/dev/null 2>&1 & nohup sleep {{MARK}} </dev/null >/dev/null 2>&1 & (sleep {{MARK}} &) ; echo started"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {}},
		{name: "setuid_binaries", key: true,
			cmd: func(fx *fixture) string {
				return "su -c 'echo SU-OK' root </dev/null 2>&1; ping -c 1 -W 1 127.0.0.1 2>&1 && echo PING-OK; " +
					"for f in /usr/bin/passwd /usr/bin/newgrp /bin/mount; do [ -u $f ] && echo setuid:$f; done; grep NoNewPrivs /proc/self/status"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				noLeak(t, r, "SU-OK")
				noLeak(t, r, "PING-OK")
				contains(t, r, "NoNewPrivs:\t1")
			}},
		{name: "memfd_and_scratch_exec", key: true, tools: []string{py3},
			cmd: func(fx *fixture) string {
				return fx.py("memfd_exec") + "; cp /bin/echo $TMPDIR/e && $TMPDIR/e SCRATCH-EXEC-OK; cp /bin/echo $TMPDIR/e2 && /lib64/ld-linux-x86-64.so.2 $TMPDIR/e2 LDSO-EXEC-OK"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				noLeak(t, r, "EXEC-OK")
			}},
		{name: "x32_and_foreign_abi", tools: []string{py3},
			cmd: func(fx *fixture) string {
				if runtime.GOARCH != "amd64" {
					return "echo rc=159"
				}
				return fx.py("syscall", strconv.Itoa(0x40000000|int(syscall.SYS_GETPID))) + "; echo rc=$?"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				// 159 = 128 + SIGSYS: the filter killed the process.
				contains(t, r, "rc=159")
			}},
		{name: "write_proc_sys_and_hostname", key: true,
			cmd: func(fx *fixture) string {
				return "echo ironvise-pwned > /proc/sys/kernel/domainname; hostname ironvise-pwned; echo x > /dev/tty; echo x > /dev/sda"
			},
			check: func(t *testing.T, fx *fixture, r sandbox.Result) {
				if b, _ := os.ReadFile("/proc/sys/kernel/domainname"); strings.Contains(string(b), "ironvise-pwned") {
					t.Fatal("the sandbox changed the host's domain name")
				}
				if h, _ := os.Hostname(); h == "ironvise-pwned" {
					t.Fatal("the sandbox changed the host's name")
				}
			}},
	}
}

// TestEscapeSuite runs every escape attempt through the native tier as the
// user the tests run as (root in CI).
func TestEscapeSuite(t *testing.T) {
	runEscapeSuite(t, sandbox.Options{}, false)
}

// TestEscapeSuiteAsUser runs the key attempts with ECTO_SANDBOX_USER: the
// root parent switches the command to nobody.
func TestEscapeSuiteAsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching user needs root")
	}
	runEscapeSuite(t, sandbox.Options{User: "nobody"}, true)
}

func runEscapeSuite(t *testing.T, opts sandbox.Options, keyOnly bool) {
	runEscapeSuiteOn(t, newTestTier(t, opts), opts, keyOnly)
}

// runEscapeSuiteOn is runEscapeSuite on tier, built with opts.
func runEscapeSuiteOn(t *testing.T, tier *Tier, opts sandbox.Options, keyOnly bool) {
	cases := escapeCases(t)
	if n := len(cases); n < 30 && !keyOnly {
		t.Fatalf("the escape suite has %d attempts; want at least 30", n)
	}
	for _, tc := range cases {
		if keyOnly && !tc.key {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if why, ok := notInContainerMode(tc.name, opts); ok {
				t.Skip(why)
			}
			for _, tool := range tc.tools {
				requireTool(t, tool)
			}
			fx := newFixture(t)
			cmd := tc.cmd(fx)
			var sleeper int
			var mark string
			switch {
			case strings.Contains(cmd, "{{FD}}"):
				// A descriptor IronVise leaked by mistake: opened without
				// O_CLOEXEC, so fork/exec would pass it on.
				fd, err := syscall.Open(fx.secret, syscall.O_RDONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { syscall.Close(fd) })
				cmd = strings.ReplaceAll(cmd, "{{FD}}", strconv.Itoa(fd))
			case strings.Contains(cmd, "{{SLEEPER}}"):
				sleeper = hostSleeper(t).Process.Pid
				cmd = strings.ReplaceAll(cmd, "{{SLEEPER}}", strconv.Itoa(sleeper))
			case strings.Contains(cmd, "{{SOCK}}"):
				sock := filepath.Join(fx.ws, "daemon.sock")
				l, err := net.Listen("unix", sock)
				if err != nil {
					t.Fatal(err)
				}
				os.Chmod(sock, 0o777)
				t.Cleanup(func() {
					l.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(50 * time.Millisecond))
					if c, err := l.Accept(); err == nil {
						c.Close()
						t.Error("a connection from the sandbox reached the host's Unix socket")
					}
					l.Close()
				})
				cmd = strings.ReplaceAll(cmd, "{{SOCK}}", sock)
			case strings.Contains(cmd, "{{MARK}}"):
				mark = "300." + strconv.FormatInt(time.Now().UnixNano()%1e9, 10)
				cmd = strings.ReplaceAll(cmd, "{{MARK}}", mark)
			}
			mods := []func(*sandbox.Request){}
			if tc.mod != nil {
				mods = append(mods, tc.mod)
			}
			r := run(t, tier, fx, cmd, mods...)
			if opts.User != "" && (r.Enforced.UID == nil || *r.Enforced.UID != 65534) {
				t.Fatalf("ran as uid %v; want 65534 (nobody)", r.Enforced.UID)
			}
			if sleeper != 0 && !alive(sleeper) {
				t.Fatalf("the sandbox killed host process %d", sleeper)
			}
			if mark != "" {
				if pids := survivors(mark); len(pids) > 0 {
					for _, p := range pids {
						syscall.Kill(p, syscall.SIGKILL)
					}
					t.Fatalf("processes %v outlived the command", pids)
				}
			}
			if tc.name == "fork_bomb" {
				// The bomb is contained when the run times out, when the
				// shell outlives it, or when the process limit it filled
				// also refuses the shell's own next fork ("Cannot fork"):
				// on a busy machine the bomb can fill it before the shell
				// starts sleep. What must never happen is a bomb process
				// outliving the run (below).
				if r.Status != sandbox.StatusTimeout && !strings.Contains(r.Stdout, "SURVIVED") && !strings.Contains(r.Stderr, "Cannot fork") {
					t.Fatalf("fork bomb: %s", r.Observation())
				}
				if pids := survivors(filepath.Base(fx.base) + "; b() { b | b & }"); len(pids) > 0 {
					t.Fatalf("fork bomb processes %v survived", pids)
				}
			}
			tc.check(t, fx, r)
			if t.Failed() || testing.Verbose() {
				t.Logf("%s\n%s", cmd, r.Observation())
			}
		})
	}
}
