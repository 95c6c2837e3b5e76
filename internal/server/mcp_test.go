package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
	"github.com/ironvise/ironvise/internal/mcpserver"
)

// bearer adds a token to every request of an MCP client.
type bearer struct {
	tok  string
	base http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.tok != "" {
		r.Header.Set("Authorization", "Bearer "+b.tok)
	}
	return b.base.RoundTrip(r)
}

func mcpConnect(ts *testServer, tok string) (*mcp.ClientSession, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.url + "/mcp",
		HTTPClient: &http.Client{Transport: &bearer{tok: tok, base: http.DefaultTransport}}, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func TestMCPOverHTTP(t *testing.T) {
	ts := startServer(t, tsOptions{})
	ctx := context.Background()
	for _, tok := range []string{"", "not-a-token", auditorTok} {
		if cs, err := mcpConnect(ts, tok); err == nil {
			cs.Close()
			t.Errorf("token %q: connected; want 401 or 403", tok)
		}
	}
	ts.wantStatus(t, "no token", http.StatusUnauthorized, "POST", "/mcp", "", map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})
	ts.wantStatus(t, "auditor", http.StatusForbidden, "POST", "/mcp", auditorTok, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "ping"})

	cs, err := mcpConnect(ts, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	just := "read the notes for the audit"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt", "justification": just}})
	if err != nil || res.IsError || !strings.Contains(mcpText(res), "PermitRootLogin") {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	id, _ := res.Meta[mcpserver.MetaSession].(string)
	if id == "" {
		t.Fatalf("no session in %v", res.Meta)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/etc/shadow", "justification": just}})
	if err != nil || !res.IsError || !strings.Contains(mcpText(res), "denied by tripwire") {
		t.Fatalf("read_file /etc/shadow: %v %+v", err, res)
	}
	s := ts.call("GET", "/api/sessions/"+id, agentTok, nil).json(t)
	if s["status"] != "running" {
		t.Fatalf("session %v", s)
	}
	// The session belongs to the token that opened the MCP session (token
	// scopes read it).
	ls, err := ts.ledger().Session(ctx, uuid.MustParse(id))
	if err != nil {
		t.Fatal(err)
	}
	if ls.CreatedBy != TokenHash(agentTok) {
		t.Fatalf("created_by %q; want the agent token's hash", ls.CreatedBy)
	}

	// Another token cannot use this MCP session, even knowing its id.
	sid := cs.ID()
	ts.wantStatus(t, "hijack", http.StatusNotFound, "POST", "/mcp", adminTok,
		map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "read_file", "arguments": map[string]any{"path": "notes.txt", "justification": just}}},
		"Mcp-Session-Id", sid, "Accept", "application/json, text/event-stream")

	// Closing the connection seals its session.
	cs.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s = ts.call("GET", "/api/sessions/"+id, agentTok, nil).json(t)
		if s["sealed"] == true {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the session of a closed MCP connection is not sealed: %v", s)
		}
		time.Sleep(50 * time.Millisecond)
	}
	v := ts.call("GET", "/api/sessions/"+id+"/verify", agentTok, nil).json(t)
	if v["ok"] != true {
		t.Fatalf("verify: %v", v)
	}
}

// MCP sessions count against the caps of sessions waiting for intents,
// and give their place back when they end.
func TestMCPSessionsAreCapped(t *testing.T) {
	ts := startServer(t, tsOptions{env: map[string]string{"ECTO_MAX_IDLE_SESSIONS_PER_TOKEN": "1"}})
	ctx := context.Background()
	args := map[string]any{"path": "notes.txt", "justification": "read the notes for the audit"}
	first, err := mcpConnect(ts, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := first.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args}); err != nil || res.IsError {
		t.Fatalf("first: %v %+v", err, res)
	}
	second, err := mcpConnect(ts, agentTok)
	if err != nil {
		t.Fatal(err)
	}
	res, err := second.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
	if err != nil || !res.IsError || !strings.Contains(mcpText(res), "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN=1") {
		t.Fatalf("second connection over the cap: %v %+v", err, res)
	}
	first.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err = second.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: args})
		if err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the place of a closed connection was not given back: %v %+v", err, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	second.Close()
}

// Shutdown ends open MCP connections (their server streams included) at
// once and seals their sessions; it does not wait out the grace period
// for them.
func TestMCPShutdownSealsOpenConnections(t *testing.T) {
	// The ledger in the data directory, so the session can be read after
	// the server closed it.
	ts := startServer(t, tsOptions{env: map[string]string{"DATABASE_URL": "<unset>"}})
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.url + "/mcp",
		HTTPClient: &http.Client{Transport: &bearer{tok: agentTok, base: http.DefaultTransport}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.txt", "justification": "read the notes for the audit"}})
	if err != nil || res.IsError {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	id := uuid.MustParse(res.Meta[mcpserver.MetaSession].(string))
	time.Sleep(200 * time.Millisecond) // the client's server stream is open
	start := time.Now()
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	// Shutdown returns the seal's error, if any: the session's end is
	// recorded before the ledger closes.
	if err := ts.Shutdown(sctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if d := time.Since(start); d >= ShutdownGrace/2 {
		t.Errorf("shutdown took %v with an MCP connection open (grace %v); its steps: %v", d, ShutdownGrace, ts.shutdownSteps)
	}
	l, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: ts.dataDir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	if sess, err := l.Session(ctx, id); err != nil || !sess.Sealed() {
		t.Fatalf("the session of a connection open at shutdown: %v %+v; want it sealed", err, sess)
	}
}
