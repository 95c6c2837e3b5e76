package container

import (
	"context"
	"encoding/json"
	"maps"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/native/seccomp"
)

func TestProxyRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, rt, goos string
		euid           int
		remote         bool
		want           string // part of the reason; "" for none
	}{
		{"rootful local podman on linux", "podman", "linux", 0, false, ""},
		{"docker", "docker", "linux", 0, false, "Docker daemon"},
		{"docker on macOS", "docker", "darwin", 501, false, "Docker daemon"},
		{"rootless podman", "podman", "linux", 1000, false, "rootless Podman"},
		{"remote podman", "podman", "linux", 0, true, "remote"},
		{"podman on macOS", "podman", "darwin", 501, true, "Linux host"},
		{"podman on windows", "podman", "windows", -1, true, "Linux host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, fix := proxyRefusal(tc.rt, tc.goos, tc.euid, tc.remote)
			if tc.want == "" {
				if reason != "" || fix != "" {
					t.Fatalf("refused: %s; fix: %s", reason, fix)
				}
				return
			}
			if !strings.Contains(reason, tc.want) || !strings.Contains(fix, "ECTO_SANDBOX_NETWORK=none") {
				t.Fatalf("got %q, fix %q; want a reason with %q and a fix", reason, fix, tc.want)
			}
		})
	}
}

// TestProxyModeAbortsWhereItCannotApply: with Docker or a remote Podman a
// proxy-mode run aborts before any container exists (the client named is
// not even there); it never runs with another network.
func TestProxyModeAbortsWhereItCannotApply(t *testing.T) {
	for _, tc := range []struct {
		rt     string
		remote bool
		want   string
	}{
		{"docker", false, "Docker daemon"},
		{"podman", true, "remote"},
	} {
		t.Run(tc.rt, func(t *testing.T) {
			// A preflight that passed: only proxy mode stands in the way.
			c := passedPreflight(t, tc.rt, tc.remote)
			res := c.Run(context.Background(), sandbox.Request{Command: "true", Workspace: t.TempDir(), Egress: egress.NewRules([]string{"example.com"}, nil)})
			if res.Status != sandbox.StatusAborted || !strings.Contains(res.Reason, "proxy mode (ECTO_SANDBOX_NETWORK=proxy) cannot be applied") ||
				(runtime.GOOS == "linux" && !strings.Contains(res.Reason, tc.want)) || !strings.Contains(res.Reason, "fix: ") {
				t.Fatalf("got %s: %s; want aborted for proxy mode (%s)", res.Status, res.Reason, tc.want)
			}
			if res.Enforced != nil || res.Egress != nil {
				t.Fatalf("an aborted run records enforcement %+v, connections %v", res.Enforced, res.Egress)
			}
		})
	}
}

func TestProxyArgv(t *testing.T) {
	none := testSpec("podman")
	proxy := none
	proxy.netns = "/proc/42/fd/7"
	a, b := none.argv(), proxy.argv()
	if !slices.Contains(a, "--network=none") || slices.Contains(a, "--dns=none") || !slices.Contains(a, "--http-proxy=false") {
		t.Fatalf("mode none argv: %q", a)
	}
	if slices.Contains(b, "--network=none") || !slices.Contains(b, "--network=ns:/proc/42/fd/7") ||
		!slices.Contains(b, "--dns=none") || !slices.Contains(b, "--http-proxy=false") {
		t.Fatalf("proxy argv %q; want the namespace and --dns=none instead of --network=none", b)
	}
	// Everything else is the same, in the same order: the proxy flags
	// come before the site's extra flags and the image.
	rest := slices.DeleteFunc(slices.Clone(b), func(s string) bool { return s == "--dns=none" })
	rest[slices.Index(rest, "--network=ns:/proc/42/fd/7")] = "--network=none"
	if !slices.Equal(rest, a) {
		t.Fatalf("proxy argv differs beyond the network flags:\n%q\n%q", b, a)
	}
	if i, j := slices.Index(b, "--dns=none"), slices.Index(b, none.image); i > j {
		t.Fatalf("--dns=none after the image: %q", b)
	}
	// Docker has no such flag and copies no variable.
	if d := testSpec("docker").argv(); slices.Contains(d, "--http-proxy=false") {
		t.Fatalf("docker argv %q", d)
	}
}

func TestProxyEnv(t *testing.T) {
	want := map[string]string{
		"HTTP_PROXY": "http://127.0.0.1:3128", "HTTPS_PROXY": "http://127.0.0.1:3128", "ALL_PROXY": "http://127.0.0.1:3128", "NO_PROXY": "",
		"http_proxy": "http://127.0.0.1:3128", "https_proxy": "http://127.0.0.1:3128", "all_proxy": "http://127.0.0.1:3128", "no_proxy": "",
	}
	if got := ProxyEnv(); !maps.Equal(got, want) {
		t.Fatalf("ProxyEnv() = %v; want %v", got, want)
	}
	// The caller's values never win over the tier's.
	env := sandbox.CommandEnv([]string{"HTTP_PROXY=http://elsewhere:1", "no_proxy=*", "LANG=C"}, ProxyEnv())
	for _, kv := range env {
		if kv == "HTTP_PROXY=http://elsewhere:1" || kv == "no_proxy=*" {
			t.Fatalf("the caller's %s passed: %q", kv, env)
		}
	}
}

// TestProxyProfileAddsOnlyTCPClientSockets compares the two container
// profiles: the proxy-mode one is the plain one plus socket for
// AF_INET/AF_INET6 stream sockets of protocol 0 or TCP, and connect.
func TestProxyProfileAddsOnlyTCPClientSockets(t *testing.T) {
	type rule struct {
		Names  []string         `json:"names"`
		Action string           `json:"action"`
		Args   []map[string]any `json:"args"`
	}
	decode := func(o *seccomp.OCI) []rule {
		var p struct {
			Syscalls []rule `json:"syscalls"`
		}
		if err := json.Unmarshal(o.JSON, &p); err != nil {
			t.Fatal(err)
		}
		return p.Syscalls
	}
	for _, arch := range []string{"amd64", "arm64"} {
		t.Run(arch, func(t *testing.T) {
			plain, err := seccomp.OCIProfile(arch)
			if err != nil {
				t.Fatal(err)
			}
			proxy, err := seccomp.OCIProxyProfile(arch)
			if err != nil {
				t.Fatal(err)
			}
			if plain.SHA256 == proxy.SHA256 {
				t.Fatal("the two profiles are the same")
			}
			a, b := decode(plain), decode(proxy)
			var added []rule
			for _, r := range b {
				if !slices.ContainsFunc(a, func(q rule) bool {
					return slices.Equal(q.Names, r.Names) && q.Action == r.Action && len(q.Args) == len(r.Args)
				}) {
					added = append(added, r)
				}
			}
			var sockets, connects int
			for _, r := range added {
				switch {
				case slices.Equal(r.Names, []string{"socket"}) && r.Action == "SCMP_ACT_ALLOW" && len(r.Args) == 3:
					fam, typ, proto := r.Args[0], r.Args[1], r.Args[2]
					if (fam["value"] != 2.0 && fam["value"] != 10.0) || fam["op"] != "SCMP_CMP_EQ" ||
						typ["value"] != 15.0 || typ["valueTwo"] != 1.0 || typ["op"] != "SCMP_CMP_MASKED_EQ" ||
						(proto["value"] != 0.0 && proto["value"] != 6.0) || proto["op"] != "SCMP_CMP_EQ" {
						t.Errorf("socket rule %v", r.Args)
					}
					sockets++
				case slices.Equal(r.Names, []string{"connect"}) && r.Action == "SCMP_ACT_ALLOW" && len(r.Args) == 0:
					connects++
				default:
					t.Errorf("unexpected addition %+v", r)
				}
			}
			if sockets != 4 || connects != 1 || len(b) != len(a)+5 {
				t.Fatalf("%d socket rules, %d connect rules, %d rules against %d; want 4, 1 and 5 more", sockets, connects, len(b), len(a))
			}
		})
	}
}

// passedPreflight is a tier of runtime rt whose preflight has passed (a
// cached result; the client named does not exist), so that only what a
// request asks for decides whether the run aborts. It skips where the
// architecture has no container profile.
func passedPreflight(t *testing.T, rt string, remote bool) *Tier {
	t.Helper()
	tier, err := New(context.Background(), sandbox.Options{DockerImage: "img:1", Container: sandbox.ContainerOptions{Runtime: rt}})
	if err != nil {
		t.Fatal(err)
	}
	c := tier.(*Tier)
	if c.noProfile != nil {
		t.Skipf("no container profile on this architecture: %v", c.noProfile)
	}
	c.bin, c.noRuntime = "/nonexistent/"+rt, nil
	c.cached, c.checked = &preflight{version: "1", imageID: "sha256:" + strings.Repeat("a", 64), logDriver: logDriverNone, remote: remote}, time.Now()
	return c
}
