package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// addSealed adds one sealed session to the SQLite ledger in dir.
func addSealed(t *testing.T, dir, goal string) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	l, err := ledgerdb.Open(ctx, "", 0, ledger.Options{DataDir: dir, CheckpointInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: goal})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Append(ctx, s.ID, ledger.TypeObservation, map[string]any{"content": goal}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, s.ID, "test"); err != nil {
		t.Fatal(err)
	}
	return s.ID
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	for _, rel := range []string{"ledger.db", filepath.Join("keys", "issuer.ed25519"), filepath.Join("keys", "checkpoint.last")} {
		b, err := os.ReadFile(filepath.Join(from, rel))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(to, rel)), 0o700)
		if err := os.WriteFile(filepath.Join(to, rel), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestCheckpointConsistency is issue 23 item 2: an auditor keeps a
// checkpoint; a later certificate from the same history proves it extends
// that checkpoint, while a certificate from a fork (a copy of the ledger
// extended with another session: same checkpoint size, another root)
// fails, and the operator cannot export one for the auditor's checkpoint.
func TestCheckpointConsistency(t *testing.T) {
	dir := t.TempDir()
	addSealed(t, dir, "before the auditor's checkpoint")
	e := &ledgerEnv{dir: dir, env: map[string]string{"ECTO_DATA_DIR": dir, "HOME": dir}}
	kept := filepath.Join(t.TempDir(), "kept.checkpoint")
	if code, _, errOut := e.run("checkpoint", "latest", "--output", kept); code != 0 {
		t.Fatalf("checkpoint latest: exit %d %s", code, errOut)
	}
	code, keyOut, _ := e.run("issuer-key")
	if code != 0 {
		t.Fatal("issuer-key failed")
	}
	key := strings.Fields(strings.SplitN(keyOut, "\n", 2)[0])[3]

	// The fork: the same ledger copied before either side moved on.
	forkDir := t.TempDir()
	copyTree(t, dir, forkDir)
	fork := &ledgerEnv{dir: forkDir, env: map[string]string{"ECTO_DATA_DIR": forkDir, "HOME": forkDir}}
	real := addSealed(t, dir, "the real history")
	forged := addSealed(t, forkDir, "the forked history")

	out := t.TempDir()
	certReal := filepath.Join(out, "real.elc")
	if code, _, errOut := e.run("report", real.String(), "--format", "certificate", "--checkpoint", kept, "-o", certReal); code != 0 {
		t.Fatalf("export with --checkpoint: exit %d %s", code, errOut)
	}
	for _, verify := range [][]string{
		{"verify-certificate", certReal, "--issuer-key", key, "--checkpoint", kept},
	} {
		if code, res, errOut := e.run(verify...); code != 0 || !strings.Contains(res, "consistent with your checkpoint") {
			t.Fatalf("%v: exit %d\n%s%s", verify, code, res, errOut)
		}
	}
	// The auditor now keeps the real ledger's newest checkpoint.
	kept2 := filepath.Join(t.TempDir(), "kept2.checkpoint")
	if code, _, errOut := e.run("checkpoint", "latest", "--output", kept2); code != 0 {
		t.Fatalf("checkpoint latest: exit %d %s", code, errOut)
	}
	// The fork's certificate has a checkpoint of the same size with
	// another root: both are signed by the issuer, only the kept one tells.
	certFork := filepath.Join(out, "fork.elc")
	if code, _, errOut := fork.run("report", forged.String(), "--format", "certificate", "-o", certFork); code != 0 {
		t.Fatalf("fork export: exit %d %s", code, errOut)
	}
	if code, res, _ := fork.run("verify-certificate", certFork, "--issuer-key", key); code != 0 {
		t.Fatalf("the fork's certificate alone should verify (that is the attack): exit %d\n%s", code, res)
	}
	code, res, _ := fork.run("verify-certificate", certFork, "--issuer-key", key, "--checkpoint", kept2)
	if code != 1 || !strings.Contains(res, "log consistent with your checkpoint") || !strings.Contains(res, "FAIL") {
		t.Fatalf("fork certificate with the kept checkpoint: exit %d; want 1 failing the consistency check\n%s", code, res)
	}
	// Nor can the operator of the fork make one for the kept checkpoint.
	if code, _, errOut := fork.run("report", forged.String(), "--format", "certificate", "--checkpoint", kept2, "-o", filepath.Join(out, "x.elc")); code != 2 || !strings.Contains(errOut, "not a checkpoint of this history") {
		t.Fatalf("fork export for the kept checkpoint: exit %d %s; want 2", code, errOut)
	}
}
