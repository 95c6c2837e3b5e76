//go:build linux

package launch

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tsh\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t1\nCapEff:\t0000000000000000\nNo colon here\n")
	for key, want := range map[string]string{"NoNewPrivs": "1", "Seccomp": "2", "Seccomp_filters": "1", "CapEff": "0000000000000000", "Name": "sh"} {
		if got, ok := statusField(status, key); !ok || got != want {
			t.Errorf("%s: %q, %v; want %q", key, got, ok, want)
		}
	}
	// A key is the whole name before the colon: Seccomp is not a prefix
	// match for Seccomp_filters, and a missing key is reported missing.
	for _, key := range []string{"Seccom", "CapPrm", "No colon here", ""} {
		if got, ok := statusField(status, key); ok {
			t.Errorf("%q found as %q", key, got)
		}
	}
}

// TestReadFileIntoBuffer: readFile gives what os.ReadFile gives, through
// the launcher's buffer when the file fits and through memory of its own
// when it does not; a file that cannot be opened is an error naming it.
func TestReadFileIntoBuffer(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	large := filepath.Join(dir, "large")
	os.WriteFile(small, []byte("Seccomp:\t2\n"), 0o600)
	os.WriteFile(large, bytes.Repeat([]byte("0123456789abcdef"), 100), 0o600)
	l := &launcher{buf: make([]byte, 64)}
	got, err := l.readFile(small)
	if err != nil || string(got) != "Seccomp:\t2\n" || &got[0] != &l.buf[0] {
		t.Fatalf("small file: %q, %v (in the buffer: %v)", got, err, err == nil && len(got) > 0 && &got[0] == &l.buf[0])
	}
	got, err = l.readFile(large)
	if err != nil || len(got) != 1600 || !bytes.Equal(got, bytes.Repeat([]byte("0123456789abcdef"), 100)) {
		t.Fatalf("large file: %d bytes, %v", len(got), err)
	}
	if _, err := l.readFile(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing file: %v", err)
	}
	// /proc files report a size of 0: they are read to their end.
	got, err = (&launcher{buf: make([]byte, readBufSize)}).readFile("/proc/self/status")
	if err != nil || !bytes.Contains(got, []byte("\nSeccomp:")) {
		t.Fatalf("/proc/self/status: %v, %q", err, got)
	}
}
