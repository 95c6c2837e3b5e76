// Package mcptest drives the real ironvise binary over MCP in tests: it
// builds the binary (and helper programs), connects an MCP client from the
// official SDK to a command, calls tools and reads sessions back through
// the command line.
package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Build builds the package pkg (an import path of this module) into dir and
// returns the binary's path. It is for TestMain, so it returns errors.
func Build(dir, pkg, name string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	return bin, nil
}

// Env is a fresh data directory and home for one test, on top of the
// process environment.
func Env(t *testing.T, extra ...string) []string {
	t.Helper()
	return append(append(os.Environ(), "ECTO_DATA_DIR="+t.TempDir(), "HOME="+t.TempDir(), "DATABASE_URL="), extra...)
}

// Connect starts bin args… with env and connects an MCP client to it. The
// returned builder collects the command's stderr.
func Connect(t *testing.T, env []string, bin string, args ...string) (*mcp.ClientSession, *Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	stderr := &Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to %s %v: %v\n%s", bin, args, err, stderr)
	}
	return cs, stderr
}

// Call calls a tool and returns its text and IsError; a protocol error
// fails the test.
func Call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	text, isErr, err := TryCall(cs, name, args)
	if err != nil {
		t.Fatalf("call %s %v: protocol error %v", name, args, err)
	}
	return text, isErr
}

// TryCall calls a tool and returns its text, IsError and any protocol
// error.
func TryCall(cs *mcp.ClientSession, name string, args map[string]any) (string, bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String(), res.IsError, nil
}

// ToolNames lists the tools the server offers.
func ToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// Event is one event as `ironvise replay --json` prints it.
type Event struct {
	Seq     uint64          `json:"seq"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// Run runs bin args… with env and returns its combined output and error.
func Run(env []string, bin string, args ...string) (string, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// Events returns session id's events.
func Events(t *testing.T, env []string, bin, id string) []Event {
	t.Helper()
	cmd := exec.Command(bin, "replay", id, "--json")
	cmd.Env = env
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("replay %s: %v", id, err)
	}
	var evs []Event
	if err := json.Unmarshal(b, &evs); err != nil {
		t.Fatalf("replay %s: %v\n%s", id, err, b)
	}
	return evs
}

var sessionRe = regexp.MustCompile(`session ([0-9a-f-]{36})`)

// SessionOf returns the first session id named in text ("session <id>").
func SessionOf(t *testing.T, text string) string {
	t.Helper()
	m := sessionRe.FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no session id in %q", text)
	}
	return m[1]
}

// Verify runs verify-session on id and fails the test unless the session
// verifies and is sealed.
func Verify(t *testing.T, env []string, bin, id string) {
	t.Helper()
	out, err := Run(env, bin, "verify-session", id)
	if err != nil || !strings.Contains(out, "verification passed") || !strings.Contains(out, ", sealed,") {
		t.Fatalf("verify-session %s: %v\n%s", id, err, out)
	}
}

// WaitFor polls cond for up to 20 seconds.
func WaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Binary is a program Main builds: the package's import path, and where
// to store the built binary's path.
type Binary struct {
	Pkg  string
	Path *string
}

// Main builds bins into a temporary directory, runs the tests and exits;
// call it from TestMain.
func Main(m *testing.M, bins ...Binary) {
	dir, err := os.MkdirTemp("", "ironvise-mcptest")
	for _, b := range bins {
		if err != nil {
			break
		}
		*b.Path, err = Build(dir, b.Pkg, filepath.Base(b.Pkg))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Ironvise is the import path of the ironvise command.
const Ironvise = "github.com/ironvise/ironvise/cmd/ironvise"
