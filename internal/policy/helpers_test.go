package policy

import (
	"context"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/tripwire"
)

// fakeDNS is an interface fake for the tripwire's resolver: tests cannot
// use real DNS (there is no network here, and answers would change), so a
// fixed table answers. A name mapped to nil fails to resolve.
type fakeDNS map[string][]netip.Addr

var errNoSuchHost = errors.New("no such host")

func (r fakeDNS) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	addrs, ok := r[host]
	if !ok || addrs == nil {
		return nil, errNoSuchHost
	}
	return addrs, nil
}

var testDNS = fakeDNS{
	"example.com":          {netip.MustParseAddr("93.184.215.14")},
	"api.example.com":      {netip.MustParseAddr("93.184.215.15")},
	"internal.example.com": {netip.MustParseAddr("10.0.0.5")},
	"lan.example.com":      {netip.MustParseAddr("192.168.1.20")},
	"fail.example.com":     nil,
	"api.github.com":       {netip.MustParseAddr("140.82.112.6")},
	"nginx.org":            {netip.MustParseAddr("3.125.197.172")},
	"api.openai.com":       {netip.MustParseAddr("162.159.140.245")},
}

// testEnv is a workspace and a real tripwire over it, to build the views
// the pipeline would pass to Evaluate.
type testEnv struct {
	ws string
	tw *tripwire.Tripwire
}

func newEnv(t testing.TB, goos string) *testEnv {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tripwire.LoadConfigBytes([]byte(`{"allowed_domains":["example.com","github.com","nginx.org","api.openai.com"]}`),
		tripwire.LoadOptions{Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	return &testEnv{ws: ws, tw: tripwire.New(cfg, tripwire.Options{Workspace: ws, Resolver: testDNS, GOOS: goos})}
}

func (e *testEnv) view(in *intent.Intent) *tripwire.View {
	return e.tw.View(context.Background(), in)
}

func (e *testEnv) rc(cmd string) *tripwire.View {
	return e.view(&intent.Intent{Action: intent.RunCommand, Command: cmd, Justification: "valid reason"})
}

func (e *testEnv) rf(path string) *tripwire.View {
	return e.view(&intent.Intent{Action: intent.ReadFile, Path: path, Justification: "valid reason"})
}

func (e *testEnv) hg(url string) *tripwire.View {
	return e.view(&intent.Intent{Action: intent.HTTPGet, URL: url, Justification: "valid reason"})
}

func (e *testEnv) complete() *tripwire.View {
	return e.view(&intent.Intent{Action: intent.Complete})
}

// write creates a file in the workspace.
func (e *testEnv) write(t testing.TB, rel, content string) string {
	t.Helper()
	p := filepath.Join(e.ws, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// mustParse loads a policy for Linux or fails the test.
func mustParse(t testing.TB, src string) *Policy {
	t.Helper()
	return mustParseOS(t, src, "linux")
}

func mustParseOS(t testing.TB, src, goos string) *Policy {
	t.Helper()
	p, err := Parse("test.toml", []byte(src), Options{GOOS: goos})
	if err != nil {
		t.Fatalf("policy does not load:\n%v\n--- source:\n%s", err, src)
	}
	return p
}
