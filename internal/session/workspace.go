package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/overlay"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// OverlayDir is the directory under the data dir that holds the
// session overlays ($ECTO_DATA_DIR/overlays).
const OverlayDir = "overlays"

// OverlayRoot returns the store root for the data dir.
func OverlayRoot(dataDir string) string { return filepath.Join(dataDir, OverlayDir) }

// WorkspaceMode composes the workspace mode of a session: the configured
// mode (ECTO_SANDBOX_WORKSPACE) narrowed by the policy's [workspace]
// section, then by the mode the session asked for (asked: "" for none,
// "ro" or "overlay"; exec's --workspace-mode, the API's workspace_mode).
// The configuration is the ceiling, as for the network: a policy or a
// session can turn overlay mode off but not on, and one that asks for
// overlay where the configuration or the policy says ro is an error naming
// the fix, so the session does not start with writes it expects and
// cannot get. The forbidden_paths globs are compiled with the overlay
// package's matcher here, so a malformed one stops the session before any
// command runs. mode "" (a runtime that runs no command itself) gives ro.
func WorkspaceMode(mode string, p *policy.Policy, asked string) (overlayOn bool, forbidden []string, err error) {
	switch asked {
	case "", config.WorkspaceRO, config.WorkspaceOverlay:
	default:
		return false, nil, fmt.Errorf("workspace mode %q: want %q or %q", asked, config.WorkspaceRO, config.WorkspaceOverlay)
	}
	pw, has := p.Workspace()
	if has {
		for _, g := range pw.ForbiddenPaths {
			if _, err := overlay.CompileGlob(g); err != nil {
				return false, nil, fmt.Errorf("policy %s: [workspace] forbidden_paths %q: %w", p.File(), g, err)
			}
		}
		forbidden = slices.Clone(pw.ForbiddenPaths)
	}
	switch {
	case mode != config.WorkspaceOverlay:
		if has && pw.Mode == policy.WorkspaceModeOverlay {
			return false, nil, fmt.Errorf("policy %s: [workspace] asks for mode = \"overlay\", but ECTO_SANDBOX_WORKSPACE is %q: set ECTO_SANDBOX_WORKSPACE=overlay, or remove the mode from the policy", p.File(), orRO(mode))
		}
		if asked == config.WorkspaceOverlay {
			return false, nil, fmt.Errorf("the session asks for workspace mode overlay, but ECTO_SANDBOX_WORKSPACE is %q: set ECTO_SANDBOX_WORKSPACE=overlay, or ask for ro", orRO(mode))
		}
		return false, forbidden, nil
	case has && pw.Mode == policy.WorkspaceModeRO:
		if asked == config.WorkspaceOverlay {
			return false, nil, fmt.Errorf("the session asks for workspace mode overlay, but policy %s keeps it read-only ([workspace] mode = \"ro\"): use a policy that allows overlay mode, or ask for ro", p.File())
		}
		return false, forbidden, nil
	case asked == config.WorkspaceRO:
		return false, forbidden, nil
	}
	return true, forbidden, nil
}

// BoundWorkspaceMode returns the workspace mode of session id bound again
// (Bind: exec --session, an agent hook's next call), what its
// Spec.WorkspaceMode must be so that it keeps the mode it started with.
// Under a configuration that is not overlay every session runs ro, and
// nothing is read: agent hooks bind their session on every tool call.
// Otherwise it is the mode the session's genesis recorded, or the
// configured one when the genesis recorded none.
func BoundWorkspaceMode(ctx context.Context, rt *Runtime, id uuid.UUID) (string, error) {
	if rt.Workspace != config.WorkspaceOverlay {
		return config.WorkspaceRO, nil
	}
	evs, err := rt.Ledger.Events(ctx, id, 0, 1)
	if err != nil {
		return "", fmt.Errorf("read session %s: %w", id, err)
	}
	if len(evs) == 0 || evs[0].Type != ledger.TypeGenesis {
		return "", fmt.Errorf("session %s: its first event is not a genesis", id)
	}
	var g struct {
		Workspace *ledger.SessionWorkspace `json:"workspace"`
	}
	if err := json.Unmarshal(evs[0].Payload, &g); err != nil {
		return "", fmt.Errorf("session %s: decode genesis: %w", id, err)
	}
	if g.Workspace == nil {
		return rt.Workspace, nil
	}
	return g.Workspace.Mode, nil
}

func orRO(mode string) string {
	if mode == "" {
		return config.WorkspaceRO
	}
	return mode
}

// sessionWorkspace is what the genesis records of the workspace mode (nil
// when the runtime has no workspace configuration).
func sessionWorkspace(rt *Runtime, workspace string, p *policy.Policy, asked string, on bool, forbidden []string) *ledger.SessionWorkspace {
	if rt.Workspace == "" {
		return nil
	}
	pw, has := p.Workspace()
	byPolicy := has && pw.Mode == policy.WorkspaceModeRO && rt.Workspace == config.WorkspaceOverlay
	sw := &ledger.SessionWorkspace{Mode: config.WorkspaceRO, Path: workspace, ForbiddenPaths: forbidden,
		NarrowedByPolicy:  byPolicy,
		NarrowedBySession: !byPolicy && asked == config.WorkspaceRO && rt.Workspace == config.WorkspaceOverlay}
	if sw.ForbiddenPaths == nil {
		sw.ForbiddenPaths = []string{}
	}
	if on {
		sw.Mode = config.WorkspaceOverlay
	}
	return sw
}

// agentOverlay is the agent's overlay configuration of a session.
func agentOverlay(rt *Runtime, on bool, forbidden []string) (*agent.Overlay, error) {
	if !on {
		return nil, nil
	}
	if rt.OverlayRoot == "" {
		return nil, fmt.Errorf("overlay mode: the runtime has no overlay directory")
	}
	// The native and container tiers know Request.Overlay: the Linux one
	// and rootful Podman mount it, the others abort the run. The
	// permissive tier would ignore it and run the command on the real
	// workspace, and the Firecracker tier aborts every overlay run:
	// refuse both before any command runs.
	if rt.Tier == nil {
		return nil, fmt.Errorf("overlay mode: the runtime has no sandbox tier")
	}
	switch n := rt.Tier.Name(); n {
	case sandbox.TierNativeLinux, sandbox.TierNativeDarwin, sandbox.TierNativeWindows, sandbox.TierDocker, sandbox.TierPodman:
	default:
		return nil, fmt.Errorf("overlay mode (ECTO_SANDBOX_WORKSPACE=overlay) needs the native or the Podman sandbox tier, and commands run on the %s tier, which would not run them on an overlay: unset ECTO_SANDBOX_PERMISSIVE and ECTO_FC_BINARY (or set ECTO_SANDBOX_TIER=native), or set ECTO_SANDBOX_WORKSPACE=ro", n)
	}
	st, err := overlay.NewStore(rt.OverlayRoot)
	if err != nil {
		return nil, fmt.Errorf("overlay mode: %w", err)
	}
	return &agent.Overlay{Store: st, Forbidden: forbidden}, nil
}

// layersChanged answers tripwire.OverlayChanged for a session: whether one
// of its accepted layers holds the absolute path p or a parent of it as
// anything but a plain directory. Each component is examined with Lstat
// from the layer's root down, stopping at the first entry that is not a
// directory, so a symlink in a layer is never followed. An error reading
// the layers answers true: the file is then unreviewed (fail closed).
func layersChanged(st *overlay.Store, session, workspace string) func(p string) bool {
	// The tripwire names paths under the workspace as it resolved it; the
	// session may name it through a symlink (/tmp on macOS).
	roots := []string{filepath.Clean(workspace)}
	if r, err := filepath.EvalSymlinks(workspace); err == nil && r != roots[0] {
		roots = append(roots, r)
	}
	return func(p string) bool {
		rel := ""
		for _, root := range roots {
			if r, err := filepath.Rel(root, p); err == nil && r != "." && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
				rel = r
				break
			}
		}
		if rel == "" {
			return false
		}
		layers, err := st.Layers(session)
		if err != nil {
			return true
		}
		comps := strings.Split(rel, string(filepath.Separator))
		for _, l := range layers {
			cur := l.Upper
			for i, c := range comps {
				cur = filepath.Join(cur, c)
				fi, err := os.Lstat(cur)
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				if err != nil || !fi.IsDir() || i == len(comps)-1 {
					return true
				}
			}
		}
		return false
	}
}
