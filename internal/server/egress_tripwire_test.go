package server

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/verdict"
)

// TestSessionTripwireProxyMode: the tripwire API sessions enforce judges
// command destinations by the egress allow list in proxy mode, and not in
// mode none.
func TestSessionTripwireProxyMode(t *testing.T) {
	ws, _ := filepath.EvalSymlinks(t.TempDir())
	load := func(extra ...string) *config.Config {
		env := map[string]string{"ECTO_DATA_DIR": t.TempDir(), "HOME": t.TempDir()}
		for i := 0; i+1 < len(extra); i += 2 {
			env[extra[i]] = extra[i+1]
		}
		cfg, err := config.Load(config.MapLookup(env))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	s := &Server{opts: Options{Workspace: ws}, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	in := &intent.Intent{Action: intent.RunCommand, Command: "curl https://evil.test/"}
	for _, tc := range []struct {
		name string
		cfg  *config.Config
		code verdict.Code
	}{
		{"proxy", load("ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "allowed.test"), verdict.EgressDomainNotAllowed},
		{"none", load(), verdict.OK},
		// The cached tripwire is shared; the mode is applied per call.
		{"proxy again", load("ECTO_SANDBOX_NETWORK", "proxy", "ECTO_SANDBOX_ALLOWED_DOMAINS", "evil.test"), verdict.OK},
	} {
		_, tw, err := s.sessionTripwire(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		if v := tw.Check(tw.View(context.Background(), in)); v.Code != tc.code {
			t.Errorf("%s: got %s %s; want %s", tc.name, v.Code, v.Message, tc.code)
		}
	}
}
