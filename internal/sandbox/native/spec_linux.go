//go:build linux

package native

import (
	"fmt"
	"syscall"

	"github.com/ironvise/ironvise/internal/sandbox"
)

// statusFD is the descriptor of the launcher's status pipe (ExtraFiles[0]).
const statusFD = 3

// launchSpec is what the parent tells the launcher (argv[2], JSON).
type launchSpec struct {
	Command   string         `json:"command"`
	Workspace string         `json:"workspace"`
	Scratch   string         `json:"scratch"`
	Env       []string       `json:"env"`
	Limits    sandbox.Limits `json:"limits"`
	// UID and GID, when SwitchUser, are the user to become
	// (ECTO_SANDBOX_USER).
	SwitchUser bool `json:"switch_user"`
	UID        int  `json:"uid"`
	GID        int  `json:"gid"`
	// UserNS says the launcher runs in a user namespace of its own (the
	// parent is not root).
	UserNS bool `json:"userns"`
	// Seccomp is the filter program (seccomp.Profile.Bytes), built once by
	// the parent; SeccompSHA256 is its hash, checked before install.
	Seccomp       []byte `json:"seccomp"`
	SeccompSHA256 string `json:"seccomp_sha256"`
	// Inject is a test hook: step name → errno that step's kernel call
	// returns instead of being made. It can only make a launch fail.
	Inject map[string]int `json:"inject,omitempty"`
}

// statusRecord is one JSON line the launcher writes to the status pipe.
type statusRecord struct {
	Applied *appliedRecord `json:"applied,omitempty"`
	Error   *setupError    `json:"error,omitempty"`
}

// appliedRecord is what the launcher put in force, written just before exec.
type appliedRecord struct {
	LandlockABI   int             `json:"landlock_abi"`
	SeccompSHA256 string          `json:"seccomp_sha256"`
	RLimits       sandbox.RLimits `json:"rlimits"`
	UID           int             `json:"uid"`
	CapEffective  uint64          `json:"cap_effective"`
	CapPermitted  uint64          `json:"cap_permitted"`
	NoNewPrivs    bool            `json:"no_new_privs"`
	PidMax        int             `json:"pid_max"`
	Namespaces    []string        `json:"namespaces"`
}

// setupError is a launcher failure: which step, the errno if any, and the
// fix the operator should apply.
type setupError struct {
	Step    string `json:"step"`
	Errno   int    `json:"errno,omitempty"`
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Error implements error.
func (e *setupError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Step, e.Message)
	if e.Errno != 0 {
		s += fmt.Sprintf(" (%s)", syscall.Errno(e.Errno).Error())
	}
	if e.Fix != "" {
		s += "; fix: " + e.Fix
	}
	return s
}

// Launcher steps, as named in setupError.Step and in the test hook.
const (
	stepSpec     = "spec"
	stepFDs      = "fd_sweep"
	stepSetsid   = "setsid"
	stepMounts   = "mounts"
	stepPidMax   = "pid_max"
	stepNNP      = "no_new_privs"
	stepCaps     = "capabilities"
	stepUser     = "user"
	stepRlimits  = "rlimits"
	stepLandlock = "landlock"
	stepSeccomp  = "seccomp"
	stepExec     = "exec"
)
