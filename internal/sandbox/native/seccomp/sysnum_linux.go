//go:build linux && (amd64 || arm64)

package seccomp

import (
	"bufio"
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// sysnumTable is the table of syscall names with their amd64 and arm64
// numbers: each name once, both architectures' numbers side by side, so
// that adding a syscall cannot reach one architecture and miss the other.
//
//go:embed sysnum.txt
var sysnumTable []byte

// none marks a syscall an architecture does not have.
const none = -1

// archNums are one syscall's numbers on the two architectures the profiles
// are built for.
type archNums struct{ amd64, arm64 int64 }

// syscallTable parses sysnumTable.
func syscallTable() (map[string]archNums, error) {
	table := map[string]archNums{}
	sc := bufio.NewScanner(bytes.NewReader(sysnumTable))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 3 {
			return nil, fmt.Errorf("seccomp: sysnum.txt:%d: want a name and two numbers", line)
		}
		amd64, err1 := parseSysnum(f[1])
		arm64, err2 := parseSysnum(f[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("seccomp: sysnum.txt:%d: bad number", line)
		}
		if _, dup := table[f[0]]; dup {
			return nil, fmt.Errorf("seccomp: sysnum.txt:%d: %s listed twice", line, f[0])
		}
		table[f[0]] = archNums{amd64: amd64, arm64: arm64}
	}
	return table, sc.Err()
}

// parseSysnum reads one number column: "-" is none.
func parseSysnum(s string) (int64, error) {
	if s == "-" {
		return none, nil
	}
	return strconv.ParseInt(s, 10, 32)
}

// sysnums maps the syscall names to the numbers of this architecture
// (nativeNumber picks its column); the names it lacks are absent. It is
// built on first use, not at package initialisation: the sandbox launcher
// imports this package to check a program's hash and never looks a name
// up. An unreadable table fails every profile build.
var sysnums = sync.OnceValues(func() (map[string]uint32, error) {
	table, err := syscallTable()
	if err != nil {
		return nil, err
	}
	m := make(map[string]uint32, len(table))
	for name, n := range table {
		if nr := nativeNumber(n); nr != none {
			m[name] = uint32(nr)
		}
	}
	return m, nil
})
