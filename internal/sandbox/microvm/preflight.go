package microvm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// provisionFix is the fix for a missing or unusable kernel or rootfs.
const provisionFix = "run scripts/provision-firecracker.sh --rootfs busybox (it installs /opt/ectoledger/rootfs.ext4; add a guest kernel with --kernel-url), or set ECTO_FC_KERNEL and ECTO_FC_ROOTFS"

// Available implements sandbox.Tier: the binary is Firecracker 1.5 or
// newer, KVM can be opened, the kernel and the rootfs are readable. It does
// not boot a VM; SelfTest does.
func (t *Tier) Available(ctx context.Context) error {
	_, err := t.preflight(ctx)
	return err
}

// preflight returns the cached preflight or runs it. Only a success is
// cached; the file digests are refreshed whenever a file changed.
func (t *Tier) preflight(ctx context.Context) (*preflight, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cached == nil || time.Since(t.checked) >= preflightTTL {
		p, err := t.checkLocked(ctx)
		if err != nil {
			t.cached = nil
			return nil, err
		}
		t.cached, t.checked = p, time.Now()
	}
	// The digests recorded with each run are those of the files as they
	// are now, not as they were a minute ago.
	k, err := t.digestLocked(t.kernel, "guest kernel", "ECTO_FC_KERNEL")
	if err != nil {
		t.cached = nil
		return nil, err
	}
	r, err := t.digestLocked(t.rootfs, "root filesystem", "ECTO_FC_ROOTFS")
	if err != nil {
		t.cached = nil
		return nil, err
	}
	p := *t.cached
	p.kernelSHA, p.rootfsSHA = k, r
	return &p, nil
}

var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)firecracker v?(\d+)\.(\d+)\.(\d+)`) })

// checkLocked checks the binary and KVM. t.mu must be held.
func (t *Tier) checkLocked(ctx context.Context) (*preflight, error) {
	if t.binary == "" {
		return nil, t.unavailable("ECTO_FC_BINARY is not set", "set ECTO_FC_BINARY to the firecracker binary (1.5 or newer), e.g. /usr/local/bin/firecracker", nil)
	}
	fi, err := os.Stat(t.binary)
	if err == nil && (fi.IsDir() || fi.Mode().Perm()&0o111 == 0) {
		err = errors.New("not an executable file")
	}
	if err != nil {
		return nil, t.unavailable(fmt.Sprintf("the firecracker binary %s cannot be used", t.binary),
			"install Firecracker 1.5 or newer (https://github.com/firecracker-microvm/firecracker/releases) and point ECTO_FC_BINARY at it",
			fmt.Errorf("%w: %w", ErrVMM, err))
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(vctx, t.binary, "--version")
	cmd.Env = vmmEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	m := versionRE().FindStringSubmatch(out.String())
	if runErr != nil || m == nil {
		cause := ErrVMM
		if runErr != nil {
			cause = fmt.Errorf("%w: %w", ErrVMM, runErr)
		}
		return nil, t.unavailable(fmt.Sprintf("%s --version did not report a Firecracker version (%q)", t.binary, sandbox.FirstLine(out.String(), 200)),
			"point ECTO_FC_BINARY at the firecracker binary", cause)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	version := m[1] + "." + m[2] + "." + m[3]
	if major < MinVersionMajor || major == MinVersionMajor && minor < MinVersionMinor {
		return nil, t.unavailable(fmt.Sprintf("Firecracker %s is too old (1.5 or newer is needed)", version),
			"install Firecracker 1.5 or newer", ErrVMM)
	}
	if err := t.checkKVM(); err != nil {
		return nil, err
	}
	return &preflight{version: version}, nil
}

// checkKVM opens the KVM device read-write, as Firecracker will.
func (t *Tier) checkKVM() error {
	f, err := os.OpenFile(t.kvmDevice, os.O_RDWR, 0)
	if err == nil {
		f.Close()
		return nil
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t.unavailable(t.kvmDevice+" does not exist: KVM is not available on this host",
			"enable virtualization in the firmware and load kvm_intel or kvm_amd (on a cloud VM: use an instance type with nested virtualization or bare metal), or use ECTO_DOCKER_IMAGE", err)
	case errors.Is(err, fs.ErrPermission):
		return t.unavailable(t.kvmDevice+" is not read-writable for IronVise's user",
			"add the user to the kvm group (usermod -aG kvm USER) or grant access (setfacl -m u:USER:rw /dev/kvm)", err)
	}
	return t.unavailable("cannot open "+t.kvmDevice, "check the KVM module (dmesg | grep -i kvm)", err)
}

// digestLocked returns the SHA-256 of path, cached for its size and
// modification time. t.mu must be held.
func (t *Tier) digestLocked(path, what, variable string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = errors.New("not a regular file")
		}
		return "", t.unavailable(fmt.Sprintf("the %s %s is missing (%s)", what, path, variable), provisionFix, err)
	}
	if d, ok := t.digests[path]; ok && d.size == fi.Size() && d.mtime.Equal(fi.ModTime()) {
		return d.sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", t.unavailable(fmt.Sprintf("the %s %s is not readable (%s)", what, path, variable), provisionFix, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", t.unavailable(fmt.Sprintf("reading the %s %s failed", what, path), provisionFix, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	t.digests[path] = fileDigest{size: fi.Size(), mtime: fi.ModTime(), sum: sum}
	return sum, nil
}
