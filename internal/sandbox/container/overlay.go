package container

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// Overlay mode (Request.Overlay non-nil, ECTO_SANDBOX_WORKSPACE=overlay).
//
// The container gets the workspace writable, as an overlay whose lowest
// layer is the real directory: IronVise (root) mounts overlayfs itself on
// the host, at a per-run directory only root can reach, and the container
// bind-mounts that merged view read-write at /workspace instead of the
// read-only workspace. Everything the command changes lands in
// Overlay.Upper; the real workspace and the earlier layers are lower
// layers, never written. After the run, with the container gone, every
// mount is undone, on every path (success, failure, timeout,
// cancellation).
//
// Identity. The command runs as 65534:65534, but the workspace's files
// belong to its owner (a user, mode 0644): through a plain overlay the
// command could create nothing and rewrite nothing. Each layer is therefore
// given to overlayfs through an idmapped mount that shows the workspace
// owner's uid and gid as 65534 (and root as root; every other id as
// unmapped, which the command may not change): the command edits the
// owner's files as if they were its own, and what it creates is the
// owner's on disk, in the upper layer. A workspace owned by root is
// refused: the command's files would be root's on the host (a setuid bit
// included), which a later apply would carry into the real workspace.
//
// Why not Podman's own overlay mounts (--mount type=overlay, -v …:O):
// Podman puts the upper and work directories in its storage and deletes
// them with the container (upperdir= and workdir= exist only in newer
// releases, and Docker has nothing alike), takes one lower directory, not
// the session's stack of accepted layers, and mounts it without an
// idmap, so the command could not write the owner's files anyway.

// overlayRefusal explains why overlay mode cannot be applied with this
// runtime on this host, and the fix; "" when it can. The overlay is mounted
// by IronVise on the host and handed to the runtime as a bind source, which
// takes root on Linux and a runtime that resolves the source in IronVise's
// own mount namespace: a local, rootful Podman.
//
// Security: where it cannot be applied the run aborts; the command never
// runs on the real workspace instead.
func overlayRefusal(rt, goos string, euid int, remote bool) (reason, fix string) {
	const otherwise = "or use the native tier, or set ECTO_SANDBOX_WORKSPACE=readonly"
	switch {
	case rt != "podman":
		return "the Docker daemon resolves bind-mount sources in its own mount namespace (a snap or systemd unit, Docker Desktop's VM, a remote host), so the overlay IronVise mounts may not be what the container gets",
			"set ECTO_DOCKER_RUNTIME=podman and run IronVise as root on Linux, " + otherwise
	case goos != "linux":
		return "the overlay is an overlayfs mount on the host, which needs Linux",
			"run IronVise on the Linux host of the containers, " + otherwise
	case remote:
		return "Podman is remote (a podman machine or CONTAINER_HOST): the overlay mounted here is not on the machine that runs the containers",
			"run IronVise as root on the machine that runs the containers, " + otherwise
	case euid != 0:
		return "rootless Podman: mounting the overlay and its idmapped layers needs root (CAP_SYS_ADMIN)",
			"run IronVise as root with rootful Podman, " + otherwise
	}
	return "", ""
}

// checkOverlay validates the layer stack of ov for workspace ws (absolute,
// symlinks resolved) before anything is mounted, and returns it with the
// symlinks of the directories' parents resolved (what is mounted): every
// directory absolute, existing, a real directory (not a symlink itself),
// and none inside another or the workspace (overlayfs refuses overlapping
// layers; the command would see its own upper layer). Upper must be
// empty: it becomes this command's layer.
func checkOverlay(ws string, ov *sandbox.Overlay) (*sandbox.Overlay, error) {
	const fix = "fix: give each command a fresh, empty upper and work directory outside the workspace (package overlay does)"
	if ov.Upper == "" || ov.Work == "" {
		return nil, fmt.Errorf("overlay mode: the upper and work directories are not set; %s", fix)
	}
	all := append([]string{ov.Upper, ov.Work}, ov.Layers...)
	for i, d := range all {
		if !filepath.IsAbs(d) {
			return nil, fmt.Errorf("overlay mode: layer directory %q is not an absolute path; %s", d, fix)
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return nil, fmt.Errorf("overlay mode: layer directory %s: %w; %s", d, err, fix)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("overlay mode: layer directory %s is not a directory (a symlink is refused); %s", d, fix)
		}
		// Security: judged (and mounted) by where it really is: a
		// symlinked parent must not smuggle a layer into the workspace.
		if all[i], err = filepath.EvalSymlinks(d); err != nil {
			return nil, fmt.Errorf("overlay mode: layer directory %s: %w; %s", d, err, fix)
		}
	}
	for i, d := range all {
		if within(d, ws) || within(ws, d) {
			return nil, fmt.Errorf("overlay mode: layer directory %s overlaps the workspace %s (overlayfs cannot stack a layer inside another); fix: set ECTO_DATA_DIR to a directory outside the workspace, or use the native tier", d, ws)
		}
		for _, o := range all[i+1:] {
			if within(d, o) || within(o, d) {
				return nil, fmt.Errorf("overlay mode: layer directories %s and %s overlap; %s", d, o, fix)
			}
		}
	}
	r := &sandbox.Overlay{Upper: all[0], Work: all[1], Layers: all[2:]}
	if filepath.Dir(r.Upper) != filepath.Dir(r.Work) {
		// overlayfs needs the upper and work directories on one mount;
		// IronVise idmaps their common parent as that mount.
		return nil, fmt.Errorf("overlay mode: the upper directory %s and the work directory %s are not siblings; %s", r.Upper, r.Work, fix)
	}
	entries, err := os.ReadDir(r.Upper)
	if err != nil {
		return nil, fmt.Errorf("overlay mode: read the upper directory %s: %w; %s", r.Upper, err, fix)
	}
	if len(entries) != 0 {
		return nil, fmt.Errorf("overlay mode: the upper directory %s is not empty; %s", r.Upper, fix)
	}
	return r, nil
}
