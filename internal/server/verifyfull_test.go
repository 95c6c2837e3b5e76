package server

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestVerifyFullLogsProgress: serve --verify-full on a clean ledger starts
// and logs how much it verified.
func TestVerifyFullLogsProgress(t *testing.T) {
	dataDir := t.TempDir()
	env := map[string]string{"DATABASE_URL": "<unset>"}
	ts := startServer(t, tsOptions{dataDir: dataDir, env: env})
	ts.createSession(map[string]any{"goal": "one", "agent_loop": false})
	ts.createSession(map[string]any{"goal": "two", "agent_loop": false})
	ts.Shutdown(context.Background())

	var buf bytes.Buffer
	opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, env: env})
	opts.VerifyFull = true
	opts.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	srv, err := New(context.Background(), opts)
	if err != nil {
		t.Fatalf("start on a clean ledger with VerifyFull: %v", err)
	}
	srv.Shutdown(context.Background())
	var done string
	for line := range strings.Lines(buf.String()) {
		if strings.Contains(line, "ledger verification done") {
			done = line
		}
	}
	// Three chains: the instance chain and the two sessions.
	for _, want := range []string{"sessions_done=3", "sessions=3", "problems=0", "events_per_sec="} {
		if !strings.Contains(done, want) {
			t.Fatalf("verify-full log %q lacks %q; log:\n%s", done, want, buf.String())
		}
	}
}
