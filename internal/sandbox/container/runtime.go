package container

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// preflight is what a successful preflight found.
type preflight struct {
	version string // the runtime's version ("4.3.1")
	imageID string // "sha256:<hex>", what every run starts
	// logDriver is passthrough for a local Podman, none otherwise (a
	// remote Podman and Docker have no passthrough).
	logDriver string
	// remote is a Podman that runs its containers on another machine
	// (a podman machine, CONTAINER_HOST).
	remote bool
}

// daemonProbeTimeout bounds `docker version` when choosing the runtime.
const daemonProbeTimeout = 5 * time.Second

// resolveRuntime picks the runtime client of ECTO_DOCKER_RUNTIME: docker,
// podman, or auto — docker if its daemon answers, else podman
// (docs/design/sandbox.md#container-tier).
func (t *Tier) resolveRuntime(ctx context.Context, want string) {
	lookup := func(name string) string {
		p, err := exec.LookPath(name)
		if err != nil {
			return ""
		}
		return p
	}
	switch want {
	case "docker", "podman":
		t.runtime, t.bin = want, lookup(want)
		if t.bin == "" {
			t.noRuntime = t.unavailable(want+" is not installed (not found in PATH)", installFix(want), nil)
		}
		return
	}
	docker, podman := lookup("docker"), lookup("podman")
	var dockerProblem string
	if docker != "" {
		pctx, cancel := context.WithTimeout(ctx, daemonProbeTimeout)
		defer cancel()
		_, err := runtimeOutput(pctx, docker, "version", "--format", "{{.Server.Version}}")
		switch {
		case err != nil:
			dockerProblem = "the Docker daemon does not answer (" + oneLine(err.Error()) + ")"
		case isPodmanShim(pctx, docker):
			// podman-docker's `docker` is Podman: call it by its name so
			// the record says what ran.
			if podman == "" {
				podman = docker
			}
			dockerProblem = "docker is Podman's compatibility wrapper"
		default:
			t.runtime, t.bin = "docker", docker
			return
		}
	}
	if podman != "" {
		t.runtime, t.bin = "podman", podman
		return
	}
	t.runtime = "docker"
	reason := "neither docker nor podman is installed (ECTO_DOCKER_RUNTIME=auto)"
	if dockerProblem != "" {
		reason = dockerProblem + " and podman is not installed (ECTO_DOCKER_RUNTIME=auto)"
	}
	t.noRuntime = t.unavailable(reason,
		"start the Docker daemon (systemctl start docker), or install Podman (apt-get install podman), or unset ECTO_DOCKER_IMAGE to use the native tier", nil)
}

// isPodmanShim reports whether the docker binary is Podman's wrapper.
func isPodmanShim(ctx context.Context, docker string) bool {
	out, err := runtimeOutput(ctx, docker, "--version")
	return err == nil && strings.HasPrefix(strings.ToLower(out), "podman")
}

func installFix(runtime string) string {
	if runtime == "podman" {
		return "install Podman (apt-get install podman runc; dnf install podman; brew install podman), or set ECTO_DOCKER_RUNTIME=auto"
	}
	return "install Docker (https://docs.docker.com/engine/install/), or set ECTO_DOCKER_RUNTIME=podman"
}

// preflight returns the cached preflight, or runs it: the runtime answers
// with its version and the image is present (its ID is what runs). Only a
// success is cached, for preflightTTL, so a fixed problem is noticed on the
// next command.
func (t *Tier) preflight(ctx context.Context) (*preflight, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cached != nil && time.Since(t.checked) < preflightTTL {
		return t.cached, nil
	}
	p, err := t.preflightLocked(ctx)
	if err != nil {
		t.cached = nil
		return nil, err
	}
	t.cached, t.checked = p, time.Now()
	return p, nil
}

// forget drops the cached preflight: the next run checks again. Called when
// the runtime itself failed.
func (t *Tier) forget() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cached = nil
}

// preflightLocked runs the checks. t.mu must be held.
func (t *Tier) preflightLocked(ctx context.Context) (*preflight, error) {
	if t.image == "" {
		return nil, t.unavailable("ECTO_DOCKER_IMAGE is not set",
			"set ECTO_DOCKER_IMAGE to a local image, e.g. alpine:3.19 (pull it first: "+t.runtime+" pull alpine:3.19)", nil)
	}
	if t.noRuntime != nil {
		return nil, t.noRuntime
	}
	if t.noProfile != nil {
		return nil, t.noProfile
	}
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A remote Podman (a podman machine, CONTAINER_HOST) reports its
	// server too.
	format := "{{.Client.Version}}{{if .Server}} remote{{end}}"
	if t.runtime == "docker" {
		format = "{{.Server.Version}}" // the engine's version is what isolates
	}
	version, err := runtimeOutput(pctx, t.bin, "version", "--format", format)
	if err != nil {
		fix := "check that `" + t.runtime + " info` works for the user IronVise runs as"
		if t.runtime == "docker" {
			fix = "start the Docker daemon (systemctl start docker) and check that IronVise's user may use its socket, or set ECTO_DOCKER_RUNTIME=podman"
		}
		return nil, t.unavailable(t.runtime+" does not answer", fix, err)
	}
	if reason := rootlessLimits(t.runtime, runtime.GOOS, os.Geteuid(), cgroupV2()); reason != "" {
		// Security: "best effort" below the floor is a failure, not a
		// downgrade: Podman would only warn and run without the limits.
		return nil, t.unavailable(reason,
			"run IronVise as root, or boot the host with cgroup v2 (systemd.unified_cgroup_hierarchy=1), or use the native or Firecracker tier", nil)
	}
	id, err := runtimeOutput(pctx, t.bin, "image", "inspect", "--format", "{{.Id}}", t.image)
	if err != nil {
		if pctx.Err() != nil {
			return nil, t.unavailable(t.runtime+" did not answer in time", "check `"+t.runtime+" info`", err)
		}
		// Security: IronVise never pulls (--pull=never): what runs is what
		// the operator put on the host, nothing a registry serves today.
		return nil, t.unavailable(fmt.Sprintf("image %s is not present locally (IronVise never pulls images)", quote(t.image)),
			fmt.Sprintf("%s pull %s (or %s load / import it on an offline host), or set ECTO_DOCKER_IMAGE to a local image", t.runtime, t.image, t.runtime), err)
	}
	id = strings.TrimPrefix(sandbox.FirstLine(id, 0), "sha256:")
	if !isHex(id) || len(id) != 64 {
		return nil, t.unavailable(fmt.Sprintf("%s image inspect %s returned an unexpected ID %q", t.runtime, t.image, id), "check the runtime's installation", nil)
	}
	p := &preflight{version: sandbox.FirstLine(version, 0), imageID: "sha256:" + id, logDriver: logDriverNone}
	if v, remote := strings.CutSuffix(p.version, " remote"); t.runtime == "podman" {
		p.version, p.remote = v, remote
		if !remote {
			// The command writes straight into IronVise's pipes: no
			// conmon copy, nothing stored (see argv).
			p.logDriver = logDriverPassthrough
		}
	}
	return p, nil
}

// rootlessLimits explains why the cgroup limits cannot hold: rootless
// Podman on a cgroup v1 host ignores --memory, --cpus and --pids-limit
// with only a warning. "" when they hold.
func rootlessLimits(rt, goos string, euid int, cgroupV2 bool) string {
	if rt != "podman" || goos != "linux" || euid == 0 || cgroupV2 {
		return ""
	}
	return "rootless Podman on a cgroup v1 host ignores --memory, --cpus and --pids-limit"
}

// cgroupV2 reports whether the host has the unified cgroup hierarchy.
func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// runtimeOutput runs the runtime client and returns its trimmed stdout, or
// an error carrying its first stderr line.
func runtimeOutput(ctx context.Context, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 2 * time.Second
	if err := cmd.Run(); err != nil {
		if msg := sandbox.LastLine(stderr.String(), 300); msg != "" {
			return "", fmt.Errorf("%s %s: %s: %w", bin, strings.Join(args[:min(2, len(args))], " "), msg, err)
		}
		return "", fmt.Errorf("%s %s: %w", bin, strings.Join(args[:min(2, len(args))], " "), err)
	}
	out := strings.TrimSpace(stdout.String())
	if out == "" {
		return "", errors.New(bin + " " + args[0] + ": empty output")
	}
	return out, nil
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return s != ""
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
