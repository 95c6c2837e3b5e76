package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var (
	// golden is a v1 certificate (before events carried their origin),
	// goldenV2 one of this build's format.
	golden    = filepath.Join("..", "..", "internal", "evidence", "testdata", "session.elc")
	goldenV2  = filepath.Join("..", "..", "internal", "evidence", "testdata", "session-v2.elc")
	forgedV1  = filepath.Join("..", "..", "internal", "evidence", "testdata", "forged-v1.elc")
	issuerPub = filepath.Join("..", "..", "internal", "evidence", "testdata", "issuer.pub")
)

// TestVerifyCertOrigins: both formats verify, and a certificate whose
// finding cites a client's own observation (forged-v1.elc, which the
// verifier before event origins accepted) is invalid, with the client's
// event named.
func TestVerifyCertOrigins(t *testing.T) {
	code, out, _ := verify("--issuer-key-file", issuerPub, forgedV1)
	if code != 1 || !strings.Contains(out, "certificate INVALID") || !strings.Contains(out, "names no earlier action") ||
		!strings.Contains(out, "appended by a client") {
		t.Errorf("forged certificate: exit %d; want 1, with the client's observation named\n%s", code, out)
	}
	if code, out, _ := verify("--issuer-key-file", issuerPub, goldenV2); code != 0 || strings.Count(out, " ok") != 5 {
		t.Errorf("v2 certificate: exit %d\n%s", code, out)
	}
}

func verify(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestVerifyCert(t *testing.T) {
	key, err := os.ReadFile(issuerPub)
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := verify("--issuer-key", strings.TrimSpace(string(key)), golden)
	if code != 0 || strings.Count(out, " ok") != 5 || !strings.Contains(out, "certificate valid") {
		t.Fatalf("valid certificate: exit %d\n%s", code, out)
	}
	if code, out, _ := verify("--issuer-key-file", issuerPub, "--json", golden); code != 0 || !strings.Contains(out, `"valid": true`) {
		t.Fatalf("key file, json: exit %d\n%s", code, out)
	}
	// Unpinned: only with --allow-unpinned, and it says so.
	if code, out, _ := verify("--allow-unpinned", golden); code != 0 || !strings.Contains(out, "NOT PINNED") {
		t.Fatalf("unpinned: exit %d\n%s", code, out)
	}
	data, _ := os.ReadFile(golden)
	dir := t.TempDir()
	for name, doc := range map[string]string{
		"changed byte": strings.Replace(string(data), "hunter2", "hunter3", 1),
		"unsigned":     string(data[:bytes.LastIndex(data, []byte(`,"signature":`))]) + "}",
		"truncated":    string(data[:len(data)/2]),
	} {
		p := filepath.Join(dir, name+".elc")
		os.WriteFile(p, []byte(doc), 0o644)
		if code, out, _ := verify("--issuer-key-file", issuerPub, p); code != 1 || !strings.Contains(out, "certificate INVALID") {
			t.Errorf("%s: exit %d\n%s", name, code, out)
		}
	}
	if code, out, _ := verify("--issuer-key", strings.Repeat("ab", 32), golden); code != 1 || !strings.Contains(out, "not issued by the key you trust") {
		t.Fatalf("wrong key: exit %d\n%s", code, out)
	}
	for _, args := range [][]string{{}, {"a", "b"}, {"--issuer-key", "x", golden}, {"--issuer-key-file", issuerPub, "--issuer-key-file", issuerPub, golden}, {"--bogus", golden}} {
		if code, _, _ := verify(args...); code != 2 {
			t.Errorf("%v: exit %d; want 2", args, code)
		}
	}
	if code, _, errOut := verify("--issuer-key-file", issuerPub, filepath.Join(dir, "absent.elc")); code != 1 || !strings.Contains(errOut, "absent.elc") {
		t.Errorf("missing file: exit %d %s", code, errOut)
	}
	if code, _, errOut := verify("--help"); code != 0 || !strings.Contains(errOut, "example:") {
		t.Errorf("--help: exit %d %s", code, errOut)
	}
}

// TestNoDatabaseNoNetwork holds the architecture rule: the verifier links
// no database driver, no ledger backend and no HTTP stack.
func TestNoDatabaseNoNetwork(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, banned := range []string{"modernc.org/sqlite", "github.com/jackc/", "internal/ledger/sqlite", "internal/ledger/postgres", "internal/ledger/sqlstore", "internal/ledger/ledgerdb", "net/http", "crypto/tls", "database/sql"} {
			if pkg == banned || strings.HasPrefix(pkg, banned+"/") || (strings.HasSuffix(banned, "/") && strings.HasPrefix(pkg, banned)) || strings.HasSuffix(pkg, "/"+banned) {
				if pkg == "database/sql/driver" {
					// The interface package google/uuid implements, not a
					// driver: it opens no database.
					continue
				}
				t.Errorf("verify-cert depends on %s", pkg)
			}
		}
	}
}

// TestPinIsNeverAFileName: --issuer-key is the key's value. A file in the
// working directory named like the real key and holding another one must
// not replace it (before the split, the argument was first read as a file
// name, so a file planted there pinned the attacker's key).
func TestPinIsNeverAFileName(t *testing.T) {
	key, err := os.ReadFile(issuerPub)
	if err != nil {
		t.Fatal(err)
	}
	real := strings.TrimSpace(string(key))
	cert, err := filepath.Abs(golden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	attacker := strings.Repeat("ab", 32)
	if err := os.WriteFile(filepath.Join(dir, real), []byte(attacker+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	code, out, errOut := verify("--issuer-key", real, cert)
	if code != 0 || !strings.Contains(out, "certificate valid") {
		t.Fatalf("--issuer-key %s with a planted file of that name: exit %d; want 0 (the value is the key)\n%s%s", real, code, out, errOut)
	}
	// The pinned key id is printed next to the certificate's.
	if !strings.Contains(out, "issuer key: certificate names 90204e6bdd26cc9d, pinned 90204e6bdd26cc9d") {
		t.Errorf("output does not show both key ids:\n%s", out)
	}
	// The file is only read through --issuer-key-file, and then it is the
	// attacker's key: the certificate is refused, both ids shown.
	code, out, _ = verify("--issuer-key-file", real, cert)
	if code != 1 || !strings.Contains(out, "not issued by the key you trust") || !strings.Contains(out, ", pinned 9a2db2e23f1504cd") {
		t.Fatalf("--issuer-key-file with the attacker's key: exit %d; want 1\n%s", code, out)
	}
	if code, _, errOut := verify("--issuer-key", real, "--issuer-key-file", real, cert); code != 2 || !strings.Contains(errOut, "both given") {
		t.Errorf("both pin flags: exit %d %s; want 2", code, errOut)
	}
	if code, _, errOut := verify("--issuer-key", filepath.Join(dir, real), cert); code != 2 || !strings.Contains(errOut, "--issuer-key-file") {
		t.Errorf("a path given to --issuer-key: exit %d %s; want 2 pointing at --issuer-key-file", code, errOut)
	}
}

// TestUnpinnedExitsNonZero: a CI step that checks only the exit status
// must not accept a certificate no pinned key vouches for.
func TestUnpinnedExitsNonZero(t *testing.T) {
	code, out, errOut := verify(golden)
	if code == 0 {
		t.Fatalf("unpinned verification: exit 0; want non-zero\n%s", out)
	}
	if code != 2 || !strings.Contains(errOut, "--allow-unpinned") || !strings.Contains(errOut, "--issuer-key-file") {
		t.Errorf("unpinned: exit %d %q; want 2 naming the pin flags and --allow-unpinned", code, errOut)
	}
	if code, out, _ := verify("--allow-unpinned", "--json", golden); code != 0 || !strings.Contains(out, `"issuer_pinned": false`) {
		t.Errorf("--allow-unpinned: exit %d\n%s", code, out)
	}
}

// TestMaxBytes: the size limit is a flag; a file over it is refused
// without being read whole, and nonsense values are usage errors.
func TestMaxBytes(t *testing.T) {
	if code, _, errOut := verify("--issuer-key-file", issuerPub, "--max-bytes", "1000", golden); code != 1 || !strings.Contains(errOut, "larger than 1000 bytes") || !strings.Contains(errOut, "--max-bytes") {
		t.Errorf("over --max-bytes: exit %d %q; want 1 naming the limit and the flag", code, errOut)
	}
	if code, out, _ := verify("--issuer-key-file", issuerPub, "--max-bytes", "100000000", golden); code != 0 {
		t.Errorf("raised --max-bytes: exit %d\n%s", code, out)
	}
	for _, v := range []string{"0", "-1", "2000000000"} {
		if code, _, _ := verify("--issuer-key-file", issuerPub, "--max-bytes", v, golden); code != 2 {
			t.Errorf("--max-bytes %s: exit %d; want 2", v, code)
		}
	}
}
