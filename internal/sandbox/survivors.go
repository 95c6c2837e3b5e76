package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// ProcessesMatching returns the pids of the processes whose command line
// contains marker, IronVise's own excepted: how doctor, the macOS tier's
// self-test and the tests find a probe's background processes that
// outlived it. It reads /proc where there is one and asks ps elsewhere
// (macOS).
func ProcessesMatching(ctx context.Context, marker string) ([]int, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil || len(entries) == 0 {
		return processesMatchingPS(ctx, marker)
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// processesMatchingPS is ProcessesMatching from ps's listing. ps is
// absolute so that the host's PATH plays no part; -A and -o exist in both
// macOS's and procps's ps.
func processesMatchingPS(ctx context.Context, marker string) ([]int, error) {
	out, err := exec.CommandContext(ctx, "/bin/ps", "-A", "-o", "pid=", "-o", "command=").Output()
	if err != nil {
		return nil, fmt.Errorf("/bin/ps: %w", err)
	}
	var pids []int
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || !strings.Contains(line, marker) {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// killAll kills each of pids, as far as it still exists.
func killAll(pids []int) {
	for _, pid := range pids {
		if proc, err := os.FindProcess(pid); err == nil {
			_ = proc.Kill()
		}
	}
}
