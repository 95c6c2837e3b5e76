//go:build linux

package native

import (
	"bufio"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/sandbox/native/kernel"
)

// The self-confinement tests confine a child process (this test binary,
// run again with confineChildEnv set), because confinement is irreversible
// and covers every thread. The child confines itself with ConfineSelf, then
// makes each attempt and prints one line per attempt, "<name> OK <detail>"
// or "<name> ERR <errno name> <detail>"; the parent checks the lines.

const (
	confineChildEnv = "IRONVISE_TEST_CONFINE_CHILD"
	confineHTTPEnv  = "IRONVISE_TEST_CONFINE_HTTP"  // http://127.0.0.1:port of a plain server
	confineTLSEnv   = "IRONVISE_TEST_CONFINE_HTTPS" // https://127.0.0.1:port of a TLS server
	confineCertEnv  = "IRONVISE_TEST_CONFINE_CERT"  // its certificate, PEM, in a file
	confineDNSEnv   = "IRONVISE_TEST_CONFINE_DNS"   // 127.0.0.1:port of a UDP DNS server
	confineScratch  = "IRONVISE_TEST_CONFINE_DIR"   // a directory writable before confinement
	confineHostname = "guard-model.test"            // the DNS server answers 127.0.0.1 for it
)

// TestConfineSelf runs the child and checks every attempt.
func TestConfineSelf(t *testing.T) {
	requireSandbox(t)
	body := "model says ALLOW"
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, body) }))
	defer secure.Close()
	dir := t.TempDir()
	certFile := filepath.Join(dir, "server.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: secure.Certificate().Raw}), 0o644); err != nil {
		t.Fatal(err)
	}
	dns := startDNS(t)
	_, port, _ := net.SplitHostPort(plain.Listener.Addr().String())

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run", "^TestConfineSelfChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), confineChildEnv+"=1", confineHTTPEnv+"="+plain.URL, confineTLSEnv+"="+secure.URL,
		confineCertEnv+"="+certFile, confineDNSEnv+"="+dns, confineScratch+"="+dir, "IRONVISE_TEST_CONFINE_PORT="+port,
		// crypto/x509 reads the system roots from here: the file must be
		// readable under Landlock (it is one of the profile's read paths).
		"SSL_CERT_FILE="+certFile, "SSL_CERT_DIR="+filepath.Join(dir, "no-such-dir"))
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestConfineSelfChild") {
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if name, rest, ok := strings.Cut(sc.Text(), " "); ok && strings.HasPrefix(name, "attempt:") {
			got[strings.TrimPrefix(name, "attempt:")] = rest
		}
	}
	cases := []struct {
		name string
		want string // prefix of the result
	}{
		{"failed_confine_changes_nothing", "OK native: confine: read path"},
		{"confined", "OK"},
		// What the guard worker needs keeps working.
		{"http_loopback", "OK " + body},
		{"https_loopback", "OK " + body},
		{"http_via_localhost", "OK " + body},
		{"dns_udp", "OK 127.0.0.1"},
		{"http_via_dns", "OK " + body},
		{"read_hosts", "OK"},
		{"read_ca_bundle", "OK"},
		{"read_zoneinfo", "OK"},
		{"local_time", "OK"},
		{"threads", "OK distinct="},
		{"write_stdout", "OK"},
		// What it must never do.
		{"exec_os_exec", "ERR E"},
		{"forkexec", "ERR EPERM"},
		{"execve_raw", "ERR EPERM"},
		{"execveat_raw", "ERR EPERM"},
		{"ptrace_other", "ERR EPERM"},
		{"process_vm_readv", "ERR EPERM"},
		{"write_tmp", "ERR EACCES"},
		{"write_scratch", "ERR EACCES"},
		{"write_next_to_granted_file", "ERR EACCES"},
		{"write_granted_file", "ERR EACCES"},
		{"write_granted_dir", "ERR EACCES"},
		{"mkdir_tmp", "ERR EPERM"},
		{"write_other_thread", "ERR EACCES"},
		{"exec_other_thread", "ERR EPERM"},
		{"mount_tmpfs", "ERR EPERM"},
		{"unshare_user", "ERR EPERM"},
		{"setns", "ERR EPERM"},
		{"bpf", "ERR EPERM"},
		{"perf_event_open", "ERR EPERM"},
		{"io_uring_setup", "ERR EPERM"},
		{"keyctl", "ERR EPERM"},
		{"memfd_create", "ERR EPERM"},
		{"read_passwd", "ERR EACCES"},
		{"read_proc_environ", "ERR EACCES"},
		{"list_ssl_private", "ERR EACCES"},
		{"read_own_binary", "ERR EACCES"},
		{"socket_unix", "ERR EPERM"},
		{"socket_netlink", "ERR EPERM"},
		{"socket_raw", "ERR EPERM"},
		{"listen_tcp", "ERR EPERM"},
		{"kill_parent", "ERR EPERM"},
		{"kill_other", "ERR EPERM"},
		{"prctl", "ERR EPERM"},
		{"ioctl", "ERR EPERM"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, ok := got[tc.name]
			if !ok {
				t.Fatalf("the child made no %s attempt:\n%s", tc.name, out)
			}
			if !strings.HasPrefix(res, tc.want) {
				t.Fatalf("%s: got %q; want %q…", tc.name, res, tc.want)
			}
		})
	}
	if len(got) != len(cases) {
		t.Errorf("the child made %d attempts; the test checks %d", len(got), len(cases))
	}
}

// TestConfineSelfChild is the confined child of TestConfineSelf.
func TestConfineSelfChild(t *testing.T) {
	if os.Getenv(confineChildEnv) == "" {
		t.Skip("run by TestConfineSelf")
	}
	report := func(name string, detail string, err error) {
		if err != nil {
			var e syscall.Errno
			if errors.As(err, &e) {
				fmt.Printf("attempt:%s ERR %s %v\n", name, unix.ErrnoName(e), err)
				return
			}
			fmt.Printf("attempt:%s ERR other %v\n", name, err)
			return
		}
		fmt.Printf("attempt:%s OK %s\n", name, detail)
	}
	scratch := os.Getenv(confineScratch)
	certFile := os.Getenv(confineCertEnv)

	// A process of the same user to attach to and read from, started
	// while exec is still possible; it dies with this one.
	victim := exec.Command("/bin/sleep", "60")
	victim.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}

	// A thread that exists before confinement and acts after it: the
	// restrictions must reach it too.
	start, done := make(chan struct{}), make(chan [2]error)
	go func() {
		runtime.LockOSThread() // keep this goroutine on its own thread
		defer runtime.UnlockOSThread()
		<-start
		werr := os.WriteFile(filepath.Join(scratch, "from-other-thread"), []byte("x"), 0o644)
		eerr := unix.Exec("/bin/true", []string{"true"}, nil)
		done <- [2]error{werr, eerr}
	}()

	// A profile that cannot be applied fails before the first
	// irreversible step: the process can still write afterwards.
	if _, err := ConfineSelf(HTTPSClient().WithReadPaths(filepath.Join(scratch, "missing.pem"))); err == nil {
		report("failed_confine_changes_nothing", "", errors.New("a missing read path was accepted"))
	} else {
		report("failed_confine_changes_nothing", err.Error(), os.WriteFile(filepath.Join(scratch, "before"), []byte("x"), 0o644))
	}

	c, err := ConfineSelf(HTTPSClient().WithReadPaths(certFile))
	if err != nil {
		report("confined", "", err)
		t.Fatalf("ConfineSelf: %v", err)
	}
	report("confined", fmt.Sprintf("abi=%d seccomp=%s nnp=%v paths=%d", c.LandlockABI, c.SeccompSHA256[:12], c.NoNewPrivs, len(c.ReadPaths)), nil)

	close(start)
	r := <-done
	report("write_other_thread", "", r[0])
	report("exec_other_thread", "", r[1])

	get := func(client *http.Client, url string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return "", err
		}
		resp, err := client.Do(req)
		if err != nil {
			return "", unwrapErrno(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	b, err := get(&http.Client{}, os.Getenv(confineHTTPEnv))
	report("http_loopback", b, err)
	// The default transport and the system roots (SSL_CERT_FILE names
	// the test server's certificate): a real TLS handshake, with the roots
	// read lazily, after confinement.
	b, err = get(&http.Client{}, os.Getenv(confineTLSEnv))
	report("https_loopback", b, err)
	port := os.Getenv("IRONVISE_TEST_CONFINE_PORT")
	b, err = get(&http.Client{}, "http://localhost:"+port)
	report("http_via_localhost", b, err)

	// DNS over UDP to a loopback server, with Go's own resolver.
	res := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", os.Getenv(confineDNSEnv))
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	addrs, err := res.LookupHost(ctx, confineHostname)
	cancel()
	report("dns_udp", strings.Join(addrs, ","), unwrapErrno(err))
	viaDNS := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{Resolver: res}).DialContext}}
	b, err = get(viaDNS, "http://"+net.JoinHostPort(confineHostname, port))
	report("http_via_dns", b, err)

	_, err = os.ReadFile("/etc/hosts")
	report("read_hosts", "", err)
	if _, serr := os.Stat("/etc/ssl/certs/ca-certificates.crt"); serr == nil {
		_, err = os.ReadFile("/etc/ssl/certs/ca-certificates.crt")
	} else {
		_, err = os.ReadFile(certFile)
	}
	report("read_ca_bundle", "", err)
	_, err = os.ReadFile("/usr/share/zoneinfo/UTC")
	report("read_zoneinfo", "", err)
	report("local_time", time.Now().Format(time.RFC3339), nil)
	// New threads still start (clone with CLONE_THREAD): more goroutines
	// locked to threads of their own than the process had threads.
	n := len(tasks) + 4
	tids, release := make(chan int), make(chan struct{})
	for range n {
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- unix.Gettid()
			<-release
		}()
	}
	distinct := map[int]bool{}
	for range n {
		distinct[<-tids] = true
	}
	close(release)
	report("threads", fmt.Sprintf("distinct=%d of %d (had %d)", len(distinct), n, len(tasks)), nil)
	_, err = fmt.Fprint(os.Stdout, "")
	report("write_stdout", "", err)

	// os/exec stops at Landlock (no execute right: faccessat X_OK), the
	// raw fork at seccomp.
	err = exec.Command("/bin/true").Run()
	report("exec_os_exec", "", unwrapErrno(err))
	_, err = syscall.ForkExec("/bin/true", []string{"true"}, nil)
	report("forkexec", "", err)
	report("execve_raw", "", unix.Exec("/bin/sh", []string{"sh", "-c", "echo attempt:execve_raw OK EXECUTED"}, nil))
	// The filter decides before the kernel looks at the arguments: null
	// pointers get EPERM from it, and EFAULT or EINVAL without it.
	report("execveat_raw", "", kernel.Attempt(unix.SYS_EXECVEAT, 0, 0, 0, 0, 0))
	report("ptrace_other", "", unix.PtraceAttach(victim.Process.Pid))
	local := make([]byte, 8)
	liov := []unix.Iovec{{Base: &local[0], Len: 8}}
	riov := []unix.RemoteIovec{{Base: 0x400000, Len: 8}}
	_, err = unix.ProcessVMReadv(victim.Process.Pid, liov, riov, 0)
	report("process_vm_readv", "", err)
	report("write_tmp", "", os.WriteFile(filepath.Join(os.TempDir(), "ironvise-confined-"+strconv.Itoa(os.Getpid())), []byte("x"), 0o644))
	report("write_scratch", "", os.WriteFile(filepath.Join(scratch, "confined"), []byte("x"), 0o644))
	report("write_next_to_granted_file", "", os.WriteFile(filepath.Join(filepath.Dir(certFile), "planted.pem"), []byte("x"), 0o644))
	report("write_granted_file", "", os.WriteFile(certFile, []byte("x"), 0o644))
	report("write_granted_dir", "", os.WriteFile("/usr/share/zoneinfo/ironvise-planted", []byte("x"), 0o644))
	report("mkdir_tmp", "", os.Mkdir(filepath.Join(scratch, "d"), 0o755))
	report("mount_tmpfs", "", unix.Mount("tmpfs", scratch, "tmpfs", 0, ""))
	report("unshare_user", "", unix.Unshare(unix.CLONE_NEWUSER))
	report("setns", "", unix.Setns(0, 0))
	report("bpf", "", kernel.Attempt(unix.SYS_BPF, 0, 0, 0))
	report("perf_event_open", "", kernel.Attempt(unix.SYS_PERF_EVENT_OPEN, 0, 0, ^uintptr(0), ^uintptr(0), 0))
	report("io_uring_setup", "", kernel.Attempt(unix.SYS_IO_URING_SETUP, 1, 0))
	_, err = unix.KeyctlInt(unix.KEYCTL_GET_KEYRING_ID, unix.KEY_SPEC_SESSION_KEYRING, 0, 0, 0)
	report("keyctl", "", err)
	_, err = unix.MemfdCreate("x", 0)
	report("memfd_create", "", err)
	_, err = os.ReadFile("/etc/passwd")
	report("read_passwd", "", err)
	// The guard key arrives in the initial environment; it must not be
	// readable back through /proc.
	_, err = os.ReadFile("/proc/self/environ")
	report("read_proc_environ", "", err)
	if _, serr := os.Stat("/etc/ssl/private"); serr == nil {
		_, err = os.ReadDir("/etc/ssl/private")
		report("list_ssl_private", "", err)
	} else {
		report("list_ssl_private", "", syscall.EACCES) // absent here: nothing to read
	}
	self, err := os.Executable() // resolved before: /proc is not readable now
	if err == nil {
		_, err = os.ReadFile(self)
	}
	report("read_own_binary", "", err)
	_, err = unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	report("socket_unix", "", err)
	_, err = unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW, unix.NETLINK_ROUTE)
	report("socket_netlink", "", err)
	_, err = unix.Socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP)
	report("socket_raw", "", err)
	_, err = net.Listen("tcp", "127.0.0.1:0")
	report("listen_tcp", "", unwrapErrno(err))
	report("kill_parent", "", unix.Kill(os.Getppid(), 0))
	report("kill_other", "", unix.Kill(victim.Process.Pid, syscall.SIGKILL))
	_, err = unix.PrctlRetInt(unix.PR_GET_DUMPABLE, 0, 0, 0, 0)
	report("prctl", "", err)
	_, err = unix.IoctlGetInt(1, unix.TIOCOUTQ)
	report("ioctl", "", err)
}

// unwrapErrno digs the errno out of a net or exec error.
func unwrapErrno(err error) error {
	var e syscall.Errno
	if err != nil && errors.As(err, &e) {
		return e
	}
	return err
}

// startDNS serves A queries over UDP on loopback: confineHostname is
// 127.0.0.1, every other name NXDOMAIN.
func startDNS(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { pc.Close(); <-done })
	go func() {
		defer close(done)
		buf := make([]byte, 1500)
		for {
			n, addr, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			resp := dnsmessage.Message{Header: dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true}, Questions: []dnsmessage.Question{q}}
			switch {
			case q.Name.String() != confineHostname+".":
				resp.RCode = dnsmessage.RCodeNameError
			case q.Type == dnsmessage.TypeA:
				resp.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
					Body: &dnsmessage.AResource{A: [4]byte{127, 0, 0, 1}}}}
			}
			b, err := resp.Pack()
			if err == nil {
				_, _ = pc.WriteTo(b, addr)
			}
		}
	}()
	return pc.LocalAddr().String()
}
