//go:build linux

package cli

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// egressChildEnv marks the re-executed test process that runs in a
// private mount namespace, where the test's own /etc/hosts names the test
// host: the proxy resolves names with the system resolver, as in
// production, and no name of the test leaks into the machine's files.
const egressChildEnv = "IRONVISE_TEST_EGRESS_CHILD"

// TestEgressEndToEnd runs `ironvise exec` in proxy mode against a test
// host that lives in a network namespace the test makes itself, reached
// by name through the real resolver: curl and Python's urllib reach the
// allowed host through the proxy; a host off the list, a name resolving to
// the metadata address and a direct connection that bypasses the proxy
// fail; every connection is an egress event that replay shows, and the
// session verifies.
func TestEgressEndToEnd(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test makes a network namespace and a private mount namespace")
	}
	for _, tool := range []string{"ip", "curl", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s on PATH: %v", tool, err)
		}
	}
	if os.Getenv(egressChildEnv) == "" {
		// The parent re-runs this test alone in a private mount namespace.
		cmd := exec.Command(os.Args[0], "-test.run=^TestEgressEndToEnd$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), egressChildEnv+"=1")
		cmd.SysProcAttr = &unix.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestEgressEndToEnd") {
			t.Fatalf("egress end-to-end child: %v\n%s", err, out)
		}
		return
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make the mount tree private: %v", err)
	}
	host := newTestHost(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	writeFile(t, hosts, fmt.Sprintf("127.0.0.1 localhost\n%s allowed.test denied.test\n169.254.169.254 meta.test\n", host.addr))
	if err := unix.Mount(hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the test's hosts file: %v", err)
	}
	t.Cleanup(func() { unix.Unmount("/etc/hosts", unix.MNT_DETACH) })

	ws, _ := filepath.EvalSymlinks(t.TempDir())
	writeFile(t, filepath.Join(ws, "ca.pem"), string(host.caPEM))
	env := cliEnv(t, "DATABASE_URL", "",
		"ECTO_SANDBOX_NETWORK", "proxy",
		"ECTO_SANDBOX_ALLOWED_DOMAINS", "allowed.test,meta.test",
		"ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", host.cidr)
	for _, c := range []struct {
		name, command string
		code          int
		out           string // in stdout and stderr together
		egress        []string
	}{
		{"curl over HTTPS", "curl -sS --cacert ca.pem https://allowed.test:8443/hi", 0,
			"hello from allowed.test:8443", []string{"allow connect allowed.test:8443 sni=allowed.test addr=10.233.0.2:8443"}},
		{"curl over plain HTTP", "curl -sS http://allowed.test:8080/hi", 0,
			"hello from allowed.test:8080", []string{"allow http allowed.test:8080"}},
		{"python urllib", `python3 -c 'import ssl, urllib.request; print(urllib.request.urlopen("https://allowed.test:8443/py", context=ssl.create_default_context(cafile="ca.pem")).read().decode())'`, 0,
			"hello from allowed.test:8443", []string{"allow connect allowed.test:8443"}},
		// The tripwire cannot see this host (it is only known at run
		// time), so the proxy refuses it and the observation says why.
		{"a host off the list", `h=denied.test; curl -sS --cacert ca.pem "https://$h:8443/"`, 56,
			"egress refused: denied.test:8443 — host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS", []string{"deny connect denied.test:8443", "egress_domain_not_allowed"}},
		{"a name resolving to the metadata address", "curl -sSf http://meta.test/latest/meta-data/", 22,
			"host meta.test resolves to a refused address: address 169.254.169.254 is in blocked range 169.254.0.0/16", []string{"deny http meta.test:80", "egress_addr_blocked"}},
		{"a direct connection that bypasses the proxy", "curl -sS --noproxy '*' --max-time 5 http://10.233.0.2:8080/", 7,
			"", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", c.command)
			if code != c.code || !strings.Contains(out+errOut, c.out) {
				t.Fatalf("exit %d, want %d; want %q in the output:\n%s\n%s", code, c.code, c.out, out, errOut)
			}
			id := sessionOf(t, errOut)
			evs := events(t, env, id)
			var egressEvents int
			for _, e := range evs {
				if e.Type == "egress" {
					egressEvents++
				}
			}
			// One connection each; the one that bypasses the proxy never
			// reaches it (there is no route) and leaves no record.
			if want := min(len(c.egress), 1); egressEvents != want {
				t.Fatalf("%d egress events; want %d: %s", egressEvents, want, types(evs))
			}
			if c.code != 0 && len(c.egress) > 0 {
				// The model reads the refusal in the observation.
				obs := string(evs[len(evs)-2].Payload)
				if evs[len(evs)-2].Type != "observation" || !strings.Contains(obs, "[egress] refused: ") {
					t.Fatalf("the observation does not name the refused connection: %s %s", evs[len(evs)-2].Type, obs)
				}
			}
			_, replay, _ := runCLI(t, env, "", "replay", id)
			for _, want := range c.egress {
				if !strings.Contains(replay, want) {
					t.Fatalf("replay lacks %q:\n%s", want, replay)
				}
			}
			if code, vout, verr := runCLI(t, env, "", "verify-session", id); code != 0 {
				t.Fatalf("verify-session %s: exit %d\n%s%s", id, code, vout, verr)
			}
		})
	}
}

// testHost is an HTTPS and a plain HTTP server in a network namespace of
// the test's, reached from the host over a veth pair.
type testHost struct {
	addr, cidr string
	caPEM      []byte
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func newTestHost(t *testing.T) *testHost {
	t.Helper()
	ns := fmt.Sprintf("ivtest-e2e-%d", os.Getpid())
	outer, inner := fmt.Sprintf("ive%da", os.Getpid()%100000), fmt.Sprintf("ive%db", os.Getpid()%100000)
	ip := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	ip("netns", "add", ns)
	t.Cleanup(func() { exec.Command("ip", "netns", "del", ns).Run() })
	ip("link", "add", outer, "type", "veth", "peer", "name", inner)
	t.Cleanup(func() { exec.Command("ip", "link", "del", outer).Run() })
	ip("link", "set", inner, "netns", ns)
	ip("addr", "add", "10.233.0.1/30", "dev", outer)
	ip("link", "set", outer, "up")
	ip("-n", ns, "addr", "add", "10.233.0.2/30", "dev", inner)
	ip("-n", ns, "link", "set", inner, "up")
	ip("-n", ns, "link", "set", "lo", "up")

	cert, caPEM := testCert(t, "allowed.test", "denied.test")
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello from "+r.Host+"\n")
	})
	tlsLn := listenIn(t, ns, "10.233.0.2:8443")
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, ReadHeaderTimeout: 10 * time.Second}
	go srv.ServeTLS(tlsLn, "", "")
	plainLn := listenIn(t, ns, "10.233.0.2:8080")
	plain := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go plain.Serve(plainLn)
	t.Cleanup(func() { srv.Close(); plain.Close() })
	return &testHost{addr: "10.233.0.2", cidr: "10.233.0.0/30", caPEM: caPEM}
}

// listenIn opens a TCP listener inside the named network namespace: the
// socket is made on a thread that has entered it, and stays there.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type res struct {
		ln  net.Listener
		err error
	}
	ch := make(chan res)
	go func() {
		// The thread is not unlocked: it has changed namespace, and the
		// runtime discards it when the goroutine ends.
		runtime.LockOSThread()
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			ch <- res{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- res{err: fmt.Errorf("setns: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		ch <- res{ln, err}
	}()
	r := <-ch
	if r.err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, r.err)
	}
	return r.ln
}

// testCert is a self-signed certificate for names, and its PEM.
func testCert(t *testing.T, names ...string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
