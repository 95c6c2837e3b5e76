package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// ProcessesMatching returns the pids of the processes whose command line
// contains marker, IronVise's own excepted, as ps lists them: how doctor
// and the macOS tier's self-test find a probe's background processes that
// outlived it where there is no /proc to read. ps is absolute so that the
// host's PATH plays no part; -A and -o exist in both macOS's and procps's
// ps.
func ProcessesMatching(ctx context.Context, marker string) ([]int, error) {
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
