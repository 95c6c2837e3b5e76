//go:build linux

package server

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// childServer is a serve process of this test binary.
type childServer struct {
	*testServer
	cmd *exec.Cmd
}

// startChild starts a serve child on dataDir and returns once it listens.
func startChild(t *testing.T, dataDir, ws, dbURL string, lease time.Duration) *childServer {
	t.Helper()
	env := baseEnv(dataDir)
	env["DATABASE_URL"] = dbURL
	if dbURL == "" {
		delete(env, "DATABASE_URL")
	}
	spec, _ := json.Marshal(serveChildSpec{Env: env, Workspace: ws, LeaseMS: int(lease / time.Millisecond)})
	exe, _ := os.Executable()
	cmd := exec.Command(exe, "-test.run", "^$")
	cmd.Env = append(os.Environ(), serveChildEnv+"="+string(spec))
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`listening on (http://\S+)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
	}()
	select {
	case u := <-url:
		return &childServer{testServer: &testServer{t: t, url: u, dataDir: dataDir, ws: ws}, cmd: cmd}
	case <-time.After(60 * time.Second):
		t.Fatal("the serve child did not start")
		return nil
	}
}

// kill9 kills the child without letting it record anything.
func (c *childServer) kill9() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

// orphanDatabases are the ledgers the orphan test runs on: a SQLite file,
// and PostgreSQL when IRONVISE_TEST_DATABASE_URL names one (.ci/run).
func orphanDatabases(t *testing.T) map[string]func(t *testing.T) string {
	dbs := map[string]func(t *testing.T) string{"sqlite": func(*testing.T) string { return "" }}
	if base := os.Getenv("IRONVISE_TEST_DATABASE_URL"); base != "" {
		dbs["postgres"] = pgURL
	}
	return dbs
}

// TestRestartReclaimsOwnSessions is issue 13 item 4 on SQLite and
// PostgreSQL: serve A is killed with SIGKILL, serve B starts on the same
// data directory at once, well within A's 30 s lease, and takes back A's
// API session: its next intent is checked and run as the next step (it
// used to be a 409 "driven by another instance" until a later restart).
func TestRestartReclaimsOwnSessions(t *testing.T) {
	for name, db := range orphanDatabases(t) {
		t.Run(name, func(t *testing.T) {
			dataDir, ws := t.TempDir(), t.TempDir()
			os.WriteFile(filepath.Join(ws, "notes.txt"), []byte("PermitRootLogin yes\n"), 0o644)
			url := db(t)
			a := startChild(t, dataDir, ws, url, 30*time.Second)
			id := a.createSession(map[string]any{"goal": "survive a crash", "agent_loop": false})
			if r := a.intent(id, `{"action":"run_command","params":{"command":"cat notes.txt"},"justification":"read the notes file"}`); r["verdict"] != "allow" {
				t.Fatalf("first intent: %v", r)
			}
			a.kill9()
			b := startChild(t, dataDir, ws, url, 30*time.Second)
			r := b.call("POST", "/api/sessions/"+id+"/intents", agentTok, `{"action":"run_command","params":{"command":"echo again"},"justification":"run after the crash"}`, "Content-Type", "application/json")
			if r.status != 200 || r.json(t)["verdict"] != "allow" || r.json(t)["step"] != float64(2) {
				t.Fatalf("intent after the restart: %d %s; want it run as step 2 by the restarted instance", r.status, r.body)
			}
			if v := b.call("GET", "/api/sessions/"+id+"/verify", auditorTok, nil).json(t); v["ok"] != true {
				t.Fatalf("verify: %v", v)
			}
		})
	}
}

// TestOrphansRecoveredInBackground is issue 13 item 4's other half on
// SQLite and PostgreSQL: serve B is killed with SIGKILL while instance C
// keeps running on the same ledger; once B's lease lapses, C fails B's
// sessions in the background, without a restart (they used to stay
// running until some instance started). While B lives, its sessions are
// its own (409 on C).
func TestOrphansRecoveredInBackground(t *testing.T) {
	for name, db := range orphanDatabases(t) {
		t.Run(name, func(t *testing.T) {
			dataDir, ws := t.TempDir(), t.TempDir()
			url := db(t)
			b := startChild(t, dataDir, ws, url, 2*time.Second)
			id := b.createSession(map[string]any{"goal": "orphan of B", "agent_loop": false})
			// C shares the ledger (and, for the SQLite file, the data
			// directory: it cannot take B's owner id while B lives).
			env := map[string]string{"DATABASE_URL": url}
			if url == "" {
				env["DATABASE_URL"] = "<unset>"
			}
			opts, _, _ := newOptions(t, tsOptions{dataDir: dataDir, workspace: ws, env: env})
			opts.LeaseDuration = 2 * time.Second
			c := startOpts(t, opts)
			if x := c.call("POST", "/api/sessions/"+id+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json"); x.status != 409 {
				t.Fatalf("intent for a live instance's session: %d %s; want 409", x.status, x.body)
			}
			b.kill9()
			deadline := time.Now().Add(20 * time.Second)
			for {
				s := c.call("GET", "/api/sessions/"+id, adminTok, nil).json(t)
				if s["status"] == "failed" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("session still %v 20 s after its instance died; want failed by background recovery", s["status"])
				}
				time.Sleep(100 * time.Millisecond)
			}
			if types := payloadTypes(c.events(id)); !strings.Contains(strings.Join(types, ","), "recovery") {
				t.Fatalf("events %v; want a recovery event", types)
			}
			x := c.call("POST", "/api/sessions/"+id+"/intents", agentTok, `{"action":"complete"}`, "Content-Type", "application/json")
			if x.status != 409 || !strings.Contains(string(x.body), "failed") {
				t.Fatalf("intent after the recovery: %d %s; want 409 naming the failed status", x.status, x.body)
			}
		})
	}
}
