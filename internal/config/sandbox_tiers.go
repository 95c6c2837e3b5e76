package config

import (
	"strconv"
	"strings"
)

func loadDocker(r *reader) Docker {
	d := Docker{
		Runtime:     r.enum("ECTO_DOCKER_RUNTIME", DefaultDockerRuntime, "auto", "docker", "podman"),
		TimeoutSecs: DefaultDockerTimeoutSecs,
	}
	d.Memory, d.MemoryBytes = r.memorySize("ECTO_DOCKER_MEMORY", DefaultDockerMemory)
	d.CPUs = r.cpus("ECTO_DOCKER_CPUS", DefaultDockerCPUs)
	d.TimeoutSecs, _ = r.intRange("ECTO_DOCKER_TIMEOUT", DefaultDockerTimeoutSecs, 1, 86400)
	if v, ok := r.get("ECTO_DOCKER_EXTRA_ARGS"); ok {
		words, err := SplitWords(v)
		if err != nil {
			r.fail("ECTO_DOCKER_EXTRA_ARGS", v, err.Error(),
				"runtime flags separated by spaces, with '...', \"...\" or \\ quoting; no $, backquotes or shell operators")
		}
		d.ExtraArgs = words
	}
	return d
}

func loadFirecracker(r *reader) Firecracker {
	f := Firecracker{
		Kernel: r.absPath("ECTO_FC_KERNEL", DefaultFCKernel),
		Rootfs: r.absPath("ECTO_FC_ROOTFS", DefaultFCRootfs),
	}
	// Firecracker accepts 1 to 32 vCPUs.
	f.VCPUs, _ = r.intRange("ECTO_FC_VCPUS", DefaultFCVCPUs, 1, 32)
	// Below 32 MiB a Linux guest does not boot; the top is 1 TiB.
	f.MemMiB, _ = r.intRange("ECTO_FC_MEM_MIB", DefaultFCMemMiB, 32, 1<<20)
	f.TimeoutSecs, _ = r.intRange("ECTO_FC_TIMEOUT_SECS", DefaultFCTimeoutSecs, 1, 86400)
	return f
}

// Limits of ECTO_DOCKER_MEMORY: Docker refuses less than 6 MiB; the top is
// 1 TiB.
const (
	minContainerMemory = 6 << 20
	maxContainerMemory = 1 << 40
)

// memorySize reads a memory size as Docker and Podman take it: digits and
// an optional unit b, k, m or g (case-insensitive). It returns the value in
// lower case and in bytes.
func (r *reader) memorySize(name, def string) (string, int64) {
	s, ok := r.get(name)
	if !ok {
		s = def
	}
	l := strings.ToLower(s)
	digits, mult := l, int64(1)
	if n := len(l); n > 0 {
		switch l[n-1] {
		case 'b':
			digits = l[:n-1]
		case 'k':
			digits, mult = l[:n-1], 1<<10
		case 'm':
			digits, mult = l[:n-1], 1<<20
		case 'g':
			digits, mult = l[:n-1], 1<<30
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || digits[0] == '+' || n > maxContainerMemory/mult || n*mult < minContainerMemory {
		r.fail(name, s, "not a memory size between 6m and 1024g", "a number with an optional unit b, k, m or g, e.g. 256m")
		return def, 256 << 20
	}
	return l, n * mult
}

// cpus reads a positive decimal number of CPUs ("1", "0.5", "2.25"), at
// most 1024, with at most 3 decimals (the runtimes' precision).
func (r *reader) cpus(name, def string) string {
	s, ok := r.get(name)
	if !ok {
		return def
	}
	whole, frac, _ := strings.Cut(s, ".")
	valid := whole != "" && len(frac) <= 3 && allDigits(whole) && allDigits(frac) && !(strings.Contains(s, ".") && frac == "")
	var v float64
	if valid {
		var err error
		v, err = strconv.ParseFloat(s, 64)
		valid = err == nil && v > 0 && v <= 1024
	}
	if !valid {
		r.fail(name, s, "not a CPU count", "a decimal number greater than 0 and at most 1024, e.g. 1 or 0.5")
		return def
	}
	return s
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
