package guard

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"go.uber.org/goleak"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/software"
)

// The Host tests run the real ironvise binary as the worker: it is built
// once per test run from ./cmd/ironvise into a temporary directory. For the
// adversarial cases the test binary itself stands between the host and that
// worker (mitmMain), as an attacker with access to the pipes would: it
// relays the real bytes and tampers with them.

// The test binary's other roles, chosen by its first argument: mitmArg
// (mitmMain), execArg (execMain: set resource limits and a directory,
// then exec the worker), ptraceArg (ptraceMain: try to attach to a
// process) and sleepArg (sleepMain: wait for stdin to end).
const (
	mitmArg   = "guard-mitm"
	execArg   = "guard-exec"
	ptraceArg = "guard-ptrace"
	sleepArg  = "guard-sleep"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case mitmArg:
			os.Exit(mitmMain(os.Args[2:]))
		case execArg:
			os.Exit(execMain(os.Args[2:]))
		case ptraceArg:
			os.Exit(ptraceMain(os.Args[2:]))
		case sleepArg:
			os.Exit(sleepMain())
		}
	}
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ironviseBinary returns the path of the freshly built ironvise binary.
func ironviseBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "ironvise-guard-test-")
		if buildErr != nil {
			return
		}
		goTool, err := exec.LookPath("go")
		if err != nil {
			goTool = "/usr/local/go/bin/go"
		}
		// Readable and searchable by all: some workers run as nobody.
		if buildErr = os.Chmod(binDir, 0o755); buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "ironvise")
		cmd := exec.Command(goTool, "build", "-o", binPath, "github.com/ironvise/ironvise/cmd/ironvise")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/ironvise: %w\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatalf("build the worker binary: %v", buildErr)
	}
	return binPath
}

// mitmMain is the man in the middle: args are the mode and the real
// ironvise binary. Modes:
//
//	reflect   echo every request line back (no worker at all)
//	oversize  answer the first request with a line over 1 MiB
//	flipmac   relay, but flip one hex digit of the first response's MAC
//	replay    relay, but send the first request again instead of the second
//	envnames  print the names of the inherited environment to stderr, relay
//	die       exit without answering
//	forge     (software enclave) read the key from the secrets pipe and
//	          send a hello that claims every property, from a process
//	          that has none of them
func mitmMain(args []string) int {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "mitm: want mode and binary")
		return 2
	}
	mode, real := args[0], args[1]
	in := bufio.NewReader(os.Stdin)
	switch mode {
	case "reflect":
		_, _ = io.Copy(os.Stdout, in)
		return 0
	case "oversize":
		if _, err := readLine(in, MaxLineBytes); err != nil {
			return 1
		}
		_, _ = os.Stdout.Write([]byte(strings.Repeat("x", MaxLineBytes+1) + "\n"))
		_, _ = io.Copy(io.Discard, in)
		return 0
	case "die":
		return 3
	case "forge":
		return forgeHello(real)
	case "envnames":
		var names []string
		for _, kv := range os.Environ() {
			k, _, _ := strings.Cut(kv, "=")
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(os.Stderr, "mitm-env %s\n", strings.Join(names, ","))
	}
	cmd := exec.Command(real, WorkerArg)
	cmd.Env = os.Environ() // GUARD_HMAC_KEY included: the worker needs it
	cmd.Stderr = os.Stderr
	if os.Getenv(SecretsFDEnv) != "" {
		// The software enclave's secrets pipe goes on to the worker.
		cmd.ExtraFiles = []*os.File{os.NewFile(SecretsFD, "guard-secrets")}
	}
	wIn, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	wOut, err := cmd.StdoutPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "mitm: start worker: %v\n", err)
		return 1
	}
	go func() {
		defer wIn.Close()
		var first []byte
		for n := 1; ; n++ {
			line, err := readLine(in, MaxLineBytes)
			if err != nil {
				return
			}
			if n == 1 {
				first = line
			}
			if mode == "replay" && n == 2 {
				line = first
			}
			if _, err := wIn.Write(append(line, '\n')); err != nil {
				return
			}
		}
	}()
	out := bufio.NewReader(wOut)
	for n := 1; ; n++ {
		line, err := readLine(out, MaxLineBytes)
		if err != nil {
			break
		}
		if mode == "flipmac" && n == 1 {
			line = badMAC(append(line, '\n'))
			line = line[:len(line)-1]
		}
		if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
			break
		}
	}
	_ = cmd.Wait()
	return 0
}

// forgeHello is the "forge" mitm: a process holding the key (the secrets
// pipe) that sends a perfect measurement of the real binary without being
// hardened or confined at all. Only the host's own /proc checks can tell.
func forgeHello(real string) int {
	secrets, err := ReadWorkerSecrets(os.NewFile(SecretsFD, "guard-secrets"))
	if err != nil {
		fmt.Fprintf(os.Stderr, "forge: %v\n", err)
		return 1
	}
	defer secrets.Close()
	sum, err := software.FileSHA256(real)
	if err != nil {
		fmt.Fprintf(os.Stderr, "forge: %v\n", err)
		return 1
	}
	line, err := sealHello(secrets.Key.Bytes(), enclave.Measurement{
		WorkerSHA256: sum, Profile: WorkerProfile, LandlockABI: 6, SeccompSHA256: strings.Repeat("ab", 32), NoNewPrivs: true,
		MemoryLocked: true, CoreLimit: 0, SecretsOverPipe: true,
	})
	if err != nil {
		return 1
	}
	_, _ = os.Stdout.Write(line)
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

var (
	wrapperOnce sync.Once
	wrapperPath string
	wrapperErr  error
)

// wrapperBinary returns a copy of this test binary that anyone may run
// (go test's own build directory is root's alone), for execMain and
// ptraceMain run as nobody.
func wrapperBinary(t testing.TB) string {
	t.Helper()
	dir := filepath.Dir(ironviseBinary(t))
	wrapperOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			wrapperErr = err
			return
		}
		b, err := os.ReadFile(self)
		if err != nil {
			wrapperErr = err
			return
		}
		wrapperPath = filepath.Join(dir, "guard.test")
		// No fork while the file is open for writing: a child forked by
		// a parallel test holds the descriptor until its exec, and
		// executing the copy meanwhile fails with ETXTBSY ("text file
		// busy"). os/exec forks under ForkLock's read lock.
		syscall.ForkLock.Lock()
		wrapperErr = os.WriteFile(wrapperPath, b, 0o755)
		syscall.ForkLock.Unlock()
	})
	if wrapperErr != nil {
		t.Fatalf("copy the test binary: %v", wrapperErr)
	}
	return wrapperPath
}
