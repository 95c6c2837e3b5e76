package microvm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/sandbox/guestproto"
	"github.com/ironvise/ironvise/internal/timerslack"
)

// vmConfig is the part of Firecracker's --config-file the tier writes.
type vmConfig struct {
	BootSource    bootSource    `json:"boot-source"`
	Drives        []drive       `json:"drives"`
	MachineConfig machineConfig `json:"machine-config"`
	Network       []struct{}    `json:"network-interfaces"`
}

type bootSource struct {
	KernelImagePath string `json:"kernel_image_path"`
	BootArgs        string `json:"boot_args"`
}

type drive struct {
	DriveID      string `json:"drive_id"`
	PathOnHost   string `json:"path_on_host"`
	IsRootDevice bool   `json:"is_root_device"`
	IsReadOnly   bool   `json:"is_read_only"`
}

type machineConfig struct {
	VCPUCount  int  `json:"vcpu_count"`
	MemSizeMiB int  `json:"mem_size_mib"`
	SMT        bool `json:"smt"`
}

// config is the VM of one run: the root filesystem read-only as /dev/vda
// (no run can change it for the next), the intent image read-only as
// /dev/vdb, and no network interface at all.
func (t *Tier) config(intentPath string) vmConfig {
	return vmConfig{
		BootSource: bootSource{KernelImagePath: t.kernel, BootArgs: bootArgs},
		Drives: []drive{
			{DriveID: "rootfs", PathOnHost: t.rootfs, IsRootDevice: true, IsReadOnly: true},
			{DriveID: "intent", PathOnHost: intentPath, IsReadOnly: true},
		},
		MachineConfig: machineConfig{VCPUCount: t.vcpus, MemSizeMiB: t.memMiB},
		Network:       []struct{}{},
	}
}

// guestTimeout is the guest's own limit: a little under the host's, so a
// command that runs too long is still reported with its output.
func guestTimeout(host time.Duration) int {
	margin := min(3*time.Second, host/2)
	return max(1, int((host - margin).Seconds()))
}

// Run implements sandbox.Tier.
func (t *Tier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	attempt, err := sandbox.Begin(sandbox.TierFirecracker, req)
	abort := attempt.Abort
	if err != nil {
		return abort("%v", err)
	}
	if req.Egress != nil {
		// Fail closed: the guest has no network device, so running the
		// command would silently drop the network the operator asked for.
		return abort("proxy mode is not supported on the Firecracker tier yet: the microVM has no network device for the egress proxy; fix: set ECTO_SANDBOX_NETWORK=none, or use the native Linux or the Podman tier (docs/reference/sandboxing.md#network-egress)")
	}
	if req.Overlay != nil {
		// Fail closed: the guest gets the workspace read-only and has no
		// layer to write to; the command would fail, or succeed without
		// the changes the session expects to record.
		return abort("overlay mode is not supported on the Firecracker tier yet: the guest has no layer for the workspace's changes; fix: set ECTO_SANDBOX_WORKSPACE=ro, or use the native Linux or the Podman tier (docs/reference/sandboxing.md#overlay-workspaces)")
	}
	pre, err := t.preflight(ctx)
	if err != nil {
		return abort("%v", err)
	}
	nonce, err := newNonce()
	if err != nil {
		return abort("make a run nonce: %v", err)
	}
	timeout := t.timeout
	if req.Timeout > 0 && req.Timeout < timeout {
		timeout = req.Timeout
	}
	limits := t.opts.Limits.Tighten(req.Limits)
	run := guestproto.Run{
		Nonce: nonce, TimeoutSecs: guestTimeout(timeout),
		Limits: guestproto.Limits{CPUSecs: limits.CPUSecs, NoFile: limits.NoFile, NProc: limits.NProc, FSizeMiB: limits.FSizeMiB},
		Env:    sandbox.CommandEnv(req.Env, nil),
	}
	if req.Limits.MemMiB > 0 {
		run.Limits.ASMiB = req.Limits.MemMiB
	}
	img, err := guestproto.EncodeIntent(req.Command, run)
	if err != nil {
		return abort("encode the intent image: %v", err)
	}

	// Security: a private directory per run (0700), removed whatever
	// happens: the intent image and the VMM's log never outlive the run
	// and no other local user can swap them.
	dir, err := os.MkdirTemp(t.tempDir, "ironvise-vm-")
	if err != nil {
		return abort("create the run directory: %v; fix: make %s writable", err, t.tempDir)
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			t.log.Warn("sandbox microvm: remove run directory", "dir", dir, "err", err)
		}
	}()
	intentPath, cfgPath, logPath := filepath.Join(dir, "intent.img"), filepath.Join(dir, "vm.json"), filepath.Join(dir, "vmm.log")
	cfg, err := json.MarshalIndent(t.config(intentPath), "", "  ")
	if err != nil {
		return abort("encode the VM configuration: %v", err)
	}
	for _, f := range []struct {
		path string
		data []byte
	}{{intentPath, img}, {cfgPath, cfg}, {logPath, nil}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return abort("write %s: %v", f.path, err)
		}
	}

	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	serial := &capped{limit: MaxSerialBytes}
	var vmmErr sandbox.Collector
	cmd := exec.CommandContext(rctx, t.binary, "--no-api", "--config-file", cfgPath,
		"--log-path", logPath, "--level", "Warning", "--id", "ironvise-"+nonce[:16])
	cmd.Dir = dir
	cmd.Env = vmmEnv()
	cmd.Stdout, cmd.Stderr = serial, &vmmErr
	confine(cmd) // its own process group; the timeout kills the group
	cmd.WaitDelay = 2 * time.Second
	// The VMM runs the command's machine: it gets the command's timer
	// slack.
	runErr := timerslack.Start(cmd.Start)
	if runErr == nil {
		runErr = cmd.Wait()
	}
	dur := attempt.Elapsed()
	timedOut := rctx.Err() == context.DeadlineExceeded && ctx.Err() == nil

	enforced := t.enforced(pre)
	if ctx.Err() != nil {
		return abort("run cancelled: %v; the microVM was killed", ctx.Err())
	}
	if cmd.ProcessState == nil && !timedOut {
		return abort("start %s: %v", t.binary, runErr)
	}
	out := serial.Bytes()
	gr, perr := guestproto.ParseFrame(out, nonce)
	if perr != nil {
		if timedOut {
			res := sandbox.Result{Tier: sandbox.TierFirecracker, Status: sandbox.StatusTimeout, Signal: "SIGKILL",
				Duration: max(dur, timeout), Limit: timeout, Enforced: enforced, ExecMode: sandbox.ExecShell,
				Reason: fmt.Sprintf("wall-clock timeout of %d s exceeded with no result from the guest; the microVM was killed", int(timeout.Seconds()))}
			return res
		}
		return abort("%s", t.explain(perr, gr, out, runErr, vmmErr.Bytes(), logPath))
	}
	return t.result(gr, enforced, dur, timeout)
}

// result converts the guest's verified report.
// timeout is the run's wall-clock limit.
func (t *Tier) result(gr *guestproto.Result, enforced *sandbox.Enforced, dur, timeout time.Duration) sandbox.Result {
	res := sandbox.Result{Tier: sandbox.TierFirecracker, Status: sandbox.StatusOK, Duration: dur, Enforced: enforced, ExecMode: sandbox.ExecShell,
		ExitCode: gr.ExitCode, Signal: gr.Signal}
	res.Stdout, res.StdoutTruncated = sandbox.CapStream(gr.Stdout, gr.StdoutTotal)
	res.Stderr, res.StderrTruncated = sandbox.CapStream(gr.Stderr, gr.StderrTotal)
	if gr.UID != nil {
		uid := *gr.UID
		enforced.UID = &uid
		if uid != 0 {
			enforced.Capabilities = "none"
		}
	}
	nnp := gr.NoNewPrivs
	enforced.NoNewPrivs = &nnp
	switch gr.Status {
	case guestproto.StatusOK:
		if res.ExitCode == nil && res.Signal == "" {
			return sandbox.Aborted(sandbox.TierFirecracker, "the guest reported neither an exit code nor a signal", dur)
		}
	case guestproto.StatusTimeout:
		res.Status, res.ExitCode, res.Signal = sandbox.StatusTimeout, nil, "SIGKILL"
		res.Reason = oneLine(gr.Reason)
		res.Limit = timeout
	default: // unsupported, error: the command did not run
		return sandbox.Aborted(sandbox.TierFirecracker, "the guest did not run the command: "+gr.Reason, dur)
	}
	return res
}

// explain turns a missing or bad result into the abort reason.
func (t *Tier) explain(perr error, gr *guestproto.Result, out []byte, runErr error, vmmErr []byte, logPath string) string {
	vmm := "the VMM exited normally"
	if runErr != nil {
		vmm = "the VMM failed (" + runErr.Error() + ")"
	}
	if msg := sandbox.LastLine(string(vmmErr), 300); msg != "" {
		vmm += ": " + msg
	} else if b, err := os.ReadFile(logPath); err == nil && sandbox.LastLine(string(b), 300) != "" {
		vmm += "; its log: " + sandbox.LastLine(string(b), 300)
	}
	switch {
	case errors.Is(perr, guestproto.ErrNoOutput):
		return fmt.Sprintf("the microVM produced no output (%s); fix: check ECTO_FC_KERNEL (an uncompressed vmlinux with an 8250 serial console) and ECTO_FC_ROOTFS (scripts/provision-firecracker.sh --rootfs busybox)", vmm)
	case errors.Is(perr, guestproto.ErrNoFrame) && gr != nil:
		return "the guest did not run the command: " + gr.Reason
	case errors.Is(perr, guestproto.ErrNoFrame):
		return fmt.Sprintf("the microVM's output carries no IronVise result frame (%s; last line: %q): the root filesystem does not implement the IronVise guest protocol; fix: scripts/provision-firecracker.sh --rootfs busybox", vmm, sandbox.LastLine(string(out), 300))
	case errors.Is(perr, guestproto.ErrTruncated):
		return fmt.Sprintf("the guest's result frame was cut short (%s)", vmm)
	}
	return fmt.Sprintf("the guest's result frame does not verify: %v (%s)", perr, vmm)
}

// enforced is the record of a run; the guest's report adds uid and
// no_new_privs.
func (t *Tier) enforced(p *preflight) *sandbox.Enforced {
	return &sandbox.Enforced{
		Network: "none", Runtime: "firecracker", RuntimeVersion: p.version,
		VMKernelSHA256: p.kernelSHA, VMRootfsSHA256: p.rootfsSHA, ScratchDir: "/tmp",
		VM: &sandbox.VMMachine{VCPUs: t.vcpus, MemMiB: t.memMiB},
	}
}

// vmmEnv is the VMM's environment: nothing of IronVise's (API keys,
// DATABASE_URL) reaches it.
func vmmEnv() []string { return []string{"PATH=" + sandbox.DefaultPath} }

func newNonce() (string, error) {
	var b [guestproto.NonceLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// capped keeps the first limit bytes written to it and drops the rest, so
// a guest flooding its console never blocks the VMM.
type capped struct {
	mu    sync.Mutex
	limit int
	buf   []byte // guarded by mu
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
