package kernel

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestCapThenExecAllocatesNothing: from the address-space cap to execve
// nothing may allocate. Here no program exists (the cap is left off, or the
// test process could not go on): the direct execs fail, the record goes to
// the pipe whole, the shell's exec fails, and none of it allocates.
func TestCapThenExecAllocatesNothing(t *testing.T) {
	dir := t.TempDir()
	prep := func(name string) *Execve {
		x, err := PrepareExecve(dir+"/"+name, []string{name, "-c", "true"}, []string{"PATH=/bin"})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	direct := []*Execve{prep("a"), prep("b")}
	shell := prep("sh")
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	record := []byte("{\"applied\":{}}\n")
	var failed int
	var errno unix.Errno
	allocs := testing.AllocsPerRun(20, func() {
		failed, errno = CapThenExec(false, 0, 0, direct, p[1], record, shell)
	})
	if failed != FailedExec || errno != unix.ENOENT {
		t.Fatalf("CapThenExec returned %d, %v; want FailedExec, ENOENT", failed, errno)
	}
	if allocs != 0 {
		t.Fatalf("CapThenExec allocates %v times per call; want 0", allocs)
	}
	buf := make([]byte, 4096)
	n, err := unix.Read(p[0], buf)
	if err != nil || n%len(record) != 0 || string(buf[:len(record)]) != string(record) {
		t.Fatalf("the pipe holds %q (%v); want whole copies of the record", buf[:n], err)
	}
}

// TestCapThenExecReportsARefusedCap: a limit the kernel refuses (soft
// above hard) is reported as such, before anything is executed or written.
func TestCapThenExecReportsARefusedCap(t *testing.T) {
	x, err := PrepareExecve("/nonexistent/sh", []string{"sh"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	failed, errno := CapThenExec(true, 2<<30, 1<<30, []*Execve{x}, p[1], []byte("record\n"), x)
	if failed != FailedCap || errno != unix.EINVAL {
		t.Fatalf("CapThenExec returned %d, %v; want FailedCap, EINVAL", failed, errno)
	}
	if n, err := unix.Read(p[0], make([]byte, 16)); n > 0 || err != unix.EAGAIN {
		t.Fatalf("read %d bytes (%v) from the status pipe; want nothing written", n, err)
	}
}
