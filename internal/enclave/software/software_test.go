package software

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestSoftwareHardenErrorText(t *testing.T) {
	e := &HardenError{Step: "mlockall(MCL_CURRENT|MCL_FUTURE)", Err: syscall.ENOMEM, Fix: "raise the limit " + FixNone}
	got := e.Error()
	for _, want := range []string{"software enclave: mlockall(MCL_CURRENT|MCL_FUTURE): ", "cannot allocate memory", "; fix: raise the limit", "GUARD_ENCLAVE=none"} {
		if !strings.Contains(got, want) {
			t.Errorf("Error() = %q; want it to contain %q", got, want)
		}
	}
	if !errors.Is(e, syscall.ENOMEM) {
		t.Fatal("HardenError does not unwrap to its reason")
	}
}

func TestSoftwareFileSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("abc"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := FileSHA256(p)
	// SHA-256("abc"), FIPS 180-2 appendix B.1.
	if want := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"; err != nil || got != want {
		t.Fatalf("FileSHA256 = %q, %v; want %q", got, err, want)
	}
	if _, err := FileSHA256(p + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v; want ErrNotExist", err)
	}
}
