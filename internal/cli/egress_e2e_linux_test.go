//go:build linux

package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ironvise/ironvise/internal/egresstest"
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
	host := egresstest.NewHost(t)
	hosts := filepath.Join(t.TempDir(), "hosts")
	writeFile(t, hosts, fmt.Sprintf("127.0.0.1 localhost\n%s allowed.test denied.test\n169.254.169.254 meta.test\n", host.Addr))
	if err := unix.Mount(hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind the test's hosts file: %v", err)
	}
	t.Cleanup(func() { unix.Unmount("/etc/hosts", unix.MNT_DETACH) })

	ws, _ := filepath.EvalSymlinks(t.TempDir())
	writeFile(t, filepath.Join(ws, "ca.pem"), string(host.CAPEM))
	env := cliEnv(t, "DATABASE_URL", "",
		"ECTO_SANDBOX_NETWORK", "proxy",
		"ECTO_SANDBOX_ALLOWED_DOMAINS", "allowed.test,meta.test",
		"ECTO_SANDBOX_EGRESS_ALLOW_CIDRS", host.Prefix.String())
	tls, plain := strconv.Itoa(host.TLSPort), strconv.Itoa(host.HTTPPort)
	for _, c := range []struct {
		name, command string
		code          int
		out           string // in stdout and stderr together
		egress        []string
	}{
		{"curl over HTTPS", "curl -sS --cacert ca.pem https://allowed.test:" + tls + "/hi", 0,
			"hello from the test host: allowed.test:" + tls + " /hi", []string{"allow connect allowed.test:" + tls + " sni=allowed.test addr=" + host.Addr.String() + ":" + tls}},
		{"curl over plain HTTP", "curl -sS http://allowed.test:" + plain + "/hi", 0,
			"hello from the test host: allowed.test:" + plain + " /hi", []string{"allow http allowed.test:" + plain}},
		{"python urllib", `python3 -c 'import ssl, urllib.request; print(urllib.request.urlopen("https://allowed.test:` + tls + `/py", context=ssl.create_default_context(cafile="ca.pem")).read().decode())'`, 0,
			"hello from the test host: allowed.test:" + tls + " /py", []string{"allow connect allowed.test:" + tls}},
		// The tripwire cannot see this host (it is only known at run
		// time), so the proxy refuses it and the observation says why.
		{"a host off the list", `h=denied.test; curl -sS --cacert ca.pem "https://$h:` + tls + `/"`, 56,
			"egress refused: denied.test:" + tls + " — host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS", []string{"deny connect denied.test:" + tls, "egress_domain_not_allowed"}},
		{"a name resolving to the metadata address", "curl -sSf http://meta.test/latest/meta-data/", 22,
			"host meta.test resolves to a refused address: address 169.254.169.254 is in blocked range 169.254.0.0/16", []string{"deny http meta.test:80", "egress_addr_blocked"}},
		{"a direct connection that bypasses the proxy", "curl -sS --noproxy '*' --max-time 5 http://" + host.Addr.String() + ":" + plain + "/", 7,
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

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
