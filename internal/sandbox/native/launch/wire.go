package launch

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ironvise/ironvise/internal/timerslack"
)

// The wire formats between the tier and the launcher are plain text built
// with strconv, not JSON: encoding/json's reflection and its first-use type
// caches cost the launcher more than everything it does with the kernel,
// and the launcher runs once per command.
//
// The Spec travels as argv elements after Arg, one "key=value" each (argv
// cannot carry NUL bytes, and neither can a path, a command or an
// environment entry execve would accept). A Status is one line on the
// status pipe: "applied" or "error" followed by space-separated key=value
// fields whose strings are Go-quoted.

// Spec argument keys.
const (
	keyCommand    = "command"
	keyArgv       = "argv"
	keyWorkspace  = "workspace"
	keyScratch    = "scratch"
	keyEnv        = "env"
	keyLimits     = "limits"
	keyUser       = "user"
	keyUserNS     = "userns"
	keyContainer  = "container"
	keySeccomp    = "seccomp"
	keySHA256     = "seccomp_sha256"
	keyInject     = "inject"
	keyHide       = "hide"
	keyScratchMiB = "scratch_mib"
	keyProxy      = "proxy"
	keyTimerSlack = "timer_slack_ns"
	// Overlay mode (Spec.Overlay): the upper directory, the work
	// directory, and one key per earlier layer, newest first.
	keyOverlayUpper = "overlay_upper"
	keyOverlayWork  = "overlay_work"
	keyOverlayLayer = "overlay_layer"
)

// errNUL is returned for a value argv cannot carry.
var errNUL = errors.New("launch: a value of the specification contains a NUL byte")

// Args encodes s as the launcher's arguments (after Arg).
func (s Spec) Args() ([]string, error) {
	l := s.Limits
	args := []string{
		keyCommand + "=" + s.Command,
		keyWorkspace + "=" + s.Workspace,
		keyScratch + "=" + s.Scratch,
		keyLimits + "=" + joinInts(l.CPUSecs, l.MemMiB, l.NoFile, l.NProc, l.FSizeMiB),
		keySeccomp + "=" + base64.StdEncoding.EncodeToString(s.Seccomp),
		keySHA256 + "=" + s.SeccompSHA256,
	}
	if s.SwitchUser {
		args = append(args, keyUser+"="+strconv.Itoa(s.UID)+":"+strconv.Itoa(s.GID))
	}
	if s.UserNS {
		args = append(args, keyUserNS+"=1")
	}
	if s.Container {
		args = append(args, keyContainer+"=1")
	}
	if s.Proxy {
		args = append(args, keyProxy+"=1")
	}
	args = append(args, keyScratchMiB+"="+strconv.Itoa(s.ScratchMiB))
	if s.TimerSlackNS != 0 {
		args = append(args, keyTimerSlack+"="+strconv.FormatUint(s.TimerSlackNS, 10))
	}
	for _, a := range s.Argv {
		args = append(args, keyArgv+"="+a)
	}
	for _, e := range s.Env {
		args = append(args, keyEnv+"="+e)
	}
	for _, h := range s.Hide {
		args = append(args, keyHide+"="+h)
	}
	if o := s.Overlay; o != nil {
		args = append(args, keyOverlayUpper+"="+o.Upper, keyOverlayWork+"="+o.Work)
		for _, l := range o.Layers {
			args = append(args, keyOverlayLayer+"="+l)
		}
	}
	for step, errno := range s.Inject {
		args = append(args, keyInject+"="+step+":"+strconv.Itoa(errno))
	}
	for _, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return nil, errNUL
		}
	}
	return args, nil
}

// maxSpecBytes bounds a framed specification; one is a few KiB (the
// seccomp program, the environment).
const maxSpecBytes = 16 << 20

// Frame is spec (Encode's output) as the parent writes it on SpecFD: its
// length as 4 big-endian bytes, then spec. The frame tells the launcher
// where the specification ends while the pipe stays open for [Start].
func Frame(spec []byte) ([]byte, error) {
	if len(spec) == 0 || len(spec) > maxSpecBytes {
		return nil, fmt.Errorf("launch: a specification of %d bytes (1 to %d)", len(spec), maxSpecBytes)
	}
	b := make([]byte, 4, 4+len(spec))
	binary.BigEndian.PutUint32(b, uint32(len(spec)))
	return append(b, spec...), nil
}

// ReadFrame reads one framed specification from r (see Frame) and decodes
// it. The bytes are read into buf when they fit (nil: into memory of their
// own): a ready launcher passes a buffer it wrote before the specification
// came, so that reading it takes no fresh memory (each page of it is a
// page fault on the way to the command). The Spec keeps nothing of buf,
// which the caller may reuse.
func ReadFrame(r io.Reader, buf []byte) (Spec, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return Spec{}, fmt.Errorf("missing launch specification: %w", err)
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > maxSpecBytes {
		return Spec{}, fmt.Errorf("a launch specification of %d bytes (1 to %d)", n, maxSpecBytes)
	}
	var b []byte
	if int(n) <= len(buf) {
		b = buf[:n]
	} else {
		b = make([]byte, n)
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return Spec{}, fmt.Errorf("truncated launch specification: %w", err)
	}
	return ParseSpec(b)
}

// Encode is the specification as a ready launcher reads it from SpecFD:
// the elements of [Spec.Args] separated by NUL bytes, which none of them
// can contain.
func (s Spec) Encode() ([]byte, error) {
	args, err := s.Args()
	if err != nil {
		return nil, err
	}
	return []byte(strings.Join(args, "\x00")), nil
}

// ParseSpec decodes what Encode produced.
func ParseSpec(b []byte) (Spec, error) {
	return ParseArgs(strings.Split(string(b), "\x00"))
}

// ParseArgs decodes the arguments Args produced. Every key but env and
// inject must appear once; command, workspace, scratch, limits, seccomp and
// seccomp_sha256 are required.
func ParseArgs(args []string) (Spec, error) {
	var s Spec
	seen := map[string]bool{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return Spec{}, fmt.Errorf("launch: argument %q is not key=value", clip(a))
		}
		if k != keyEnv && k != keyInject && k != keyHide && k != keyArgv && k != keyOverlayLayer {
			if seen[k] {
				return Spec{}, fmt.Errorf("launch: %s given twice", k)
			}
			seen[k] = true
		}
		var err error
		switch k {
		case keyCommand:
			s.Command = v
		case keyWorkspace:
			s.Workspace = v
		case keyScratch:
			s.Scratch = v
		case keyArgv:
			s.Argv = append(s.Argv, v)
		case keyEnv:
			s.Env = append(s.Env, v)
		case keyHide:
			if !strings.HasPrefix(v, "/") {
				err = errors.New("not an absolute path")
			}
			s.Hide = append(s.Hide, v)
		case keyScratchMiB:
			if s.ScratchMiB, err = strconv.Atoi(v); err == nil && s.ScratchMiB <= 0 {
				err = errors.New("want a positive number of MiB")
			}
		case keyTimerSlack:
			s.TimerSlackNS, err = timerslack.Parse(v)
		case keyLimits:
			var n []int
			if n, err = splitInts(v, ",", 5); err == nil {
				s.Limits = Limits{CPUSecs: n[0], MemMiB: n[1], NoFile: n[2], NProc: n[3], FSizeMiB: n[4]}
			}
		case keyUser:
			var n []int
			if n, err = splitInts(v, ":", 2); err == nil {
				s.SwitchUser, s.UID, s.GID = true, n[0], n[1]
			}
		case keyUserNS:
			if v != "1" {
				err = errors.New("want 1")
			}
			s.UserNS = true
		case keyContainer:
			if v != "1" {
				err = errors.New("want 1")
			}
			s.Container = true
		case keyProxy:
			if v != "1" {
				err = errors.New("want 1")
			}
			s.Proxy = true
		case keyOverlayUpper, keyOverlayWork, keyOverlayLayer:
			if !strings.HasPrefix(v, "/") {
				err = errors.New("not an absolute path")
			}
			if s.Overlay == nil {
				s.Overlay = &Overlay{}
			}
			switch k {
			case keyOverlayUpper:
				s.Overlay.Upper = v
			case keyOverlayWork:
				s.Overlay.Work = v
			default:
				s.Overlay.Layers = append(s.Overlay.Layers, v)
			}
		case keySeccomp:
			s.Seccomp, err = base64.StdEncoding.DecodeString(v)
		case keySHA256:
			s.SeccompSHA256 = v
		case keyInject:
			step, errno, _ := strings.Cut(v, ":")
			var n int
			if n, err = strconv.Atoi(errno); err == nil {
				if s.Inject == nil {
					s.Inject = map[string]int{}
				}
				s.Inject[step] = n
			}
		default:
			return Spec{}, fmt.Errorf("launch: unknown key %q", clip(k))
		}
		if err != nil {
			return Spec{}, fmt.Errorf("launch: %s: %w", k, err)
		}
	}
	for _, k := range []string{keyCommand, keyWorkspace, keyScratch, keyLimits, keySeccomp, keySHA256, keyScratchMiB} {
		if !seen[k] {
			return Spec{}, fmt.Errorf("launch: %s is missing", k)
		}
	}
	if s.Overlay != nil && (s.Overlay.Upper == "" || s.Overlay.Work == "") {
		return Spec{}, fmt.Errorf("launch: overlay mode needs both %s and %s", keyOverlayUpper, keyOverlayWork)
	}
	return s, nil
}

// Marshal encodes st as one status line, without the newline.
func (st Status) Marshal() []byte {
	var b []byte
	switch {
	case st.Outcome != nil:
		b = append(b, "outcome"...)
		b = appendInt(b, "exit", st.Outcome.Exit)
		b = appendInt(b, "signal", st.Outcome.Signal)
		b = appendInt(b, "killed", st.Outcome.Killed)
	case st.Error != nil:
		e := st.Error
		b = append(b, "error"...)
		b = appendQuoted(b, "step", e.Step)
		b = appendInt(b, "errno", e.Errno)
		b = appendQuoted(b, "message", e.Message)
		b = appendQuoted(b, "fix", e.Fix)
	case st.Applied != nil:
		a := st.Applied
		b = append(b, "applied"...)
		b = appendInt(b, "landlock_abi", a.LandlockABI)
		b = appendQuoted(b, "seccomp_sha256", a.SeccompSHA256)
		b = appendInt(b, "uid", a.UID)
		b = append(b, " cap_effective="...)
		b = strconv.AppendUint(b, a.CapEffective, 10)
		b = append(b, " cap_permitted="...)
		b = strconv.AppendUint(b, a.CapPermitted, 10)
		b = append(b, " no_new_privs="...)
		b = strconv.AppendBool(b, a.NoNewPrivs)
		b = appendInt(b, "pid_max", a.PidMax)
		b = appendQuoted(b, "namespaces", strings.Join(a.Namespaces, ","))
		b = appendInt(b, "scratch_mib", a.ScratchMiB)
		b = appendInt(b, "scratch_inodes", a.ScratchInodes)
		b = appendInt(b, "hidden", a.Hidden)
		b = appendQuoted(b, "verified", strings.Join(a.Verified, ","))
		b = appendQuoted(b, "exec", a.Exec)
		if a.Overlay != "" {
			b = appendQuoted(b, "overlay", a.Overlay)
		}
		r := a.RLimits
		b = append(b, " rlimits="...)
		b = append(b, joinInts(r.CPUSecs, r.ASMiB, r.NoFile, r.NProc, r.FSizeMiB)...)
	}
	return b
}

// ParseStatus decodes one status line (without its newline).
func ParseStatus(line []byte) (Status, error) {
	kind, rest, _ := strings.Cut(string(line), " ")
	fields, err := parseFields(rest)
	if err != nil {
		return Status{}, err
	}
	num := func(k string) (int, error) { return strconv.Atoi(fields[k]) }
	switch kind {
	case "outcome":
		o := &Outcome{}
		var e1, e2, e3 error
		o.Exit, e1 = num("exit")
		o.Signal, e2 = num("signal")
		o.Killed, e3 = num("killed")
		if err := errors.Join(e1, e2, e3); err != nil {
			return Status{}, fmt.Errorf("launch: status outcome: %w", err)
		}
		return Status{Outcome: o}, nil
	case "error":
		e := &SetupError{Step: fields["step"], Message: fields["message"], Fix: fields["fix"]}
		if e.Errno, err = num("errno"); err != nil {
			return Status{}, fmt.Errorf("launch: status errno: %w", err)
		}
		if e.Step == "" {
			return Status{}, errors.New("launch: status error without a step")
		}
		return Status{Error: e}, nil
	case "applied":
		a := &Applied{SeccompSHA256: fields["seccomp_sha256"], Exec: fields["exec"], Overlay: fields["overlay"]}
		if a.Exec != ExecArgv && a.Exec != ExecShell {
			return Status{}, fmt.Errorf("launch: status applied: exec %q is neither %s nor %s", clip(a.Exec), ExecArgv, ExecShell)
		}
		var errs []error
		add := func(err error) {
			if err != nil {
				errs = append(errs, err)
			}
		}
		a.LandlockABI, err = num("landlock_abi")
		add(err)
		a.UID, err = num("uid")
		add(err)
		a.PidMax, err = num("pid_max")
		add(err)
		a.CapEffective, err = strconv.ParseUint(fields["cap_effective"], 10, 64)
		add(err)
		a.CapPermitted, err = strconv.ParseUint(fields["cap_permitted"], 10, 64)
		add(err)
		a.NoNewPrivs, err = strconv.ParseBool(fields["no_new_privs"])
		add(err)
		if ns := fields["namespaces"]; ns != "" {
			a.Namespaces = strings.Split(ns, ",")
		}
		if v := fields["verified"]; v != "" {
			a.Verified = strings.Split(v, ",")
		}
		a.ScratchMiB, err = num("scratch_mib")
		add(err)
		a.ScratchInodes, err = num("scratch_inodes")
		add(err)
		a.Hidden, err = num("hidden")
		add(err)
		n, err := splitInts(fields["rlimits"], ",", 5)
		add(err)
		if err == nil {
			a.RLimits = RLimits{CPUSecs: n[0], ASMiB: n[1], NoFile: n[2], NProc: n[3], FSizeMiB: n[4]}
		}
		if len(errs) > 0 {
			return Status{}, fmt.Errorf("launch: status applied: %w", errors.Join(errs...))
		}
		return Status{Applied: a}, nil
	}
	return Status{}, fmt.Errorf("launch: status record %q is neither applied, error nor outcome", clip(kind))
}

// parseFields splits ` key=value key="quoted"…` into a map; a key given
// twice is an error.
func parseFields(s string) (map[string]string, error) {
	out := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ")
		if s == "" {
			return out, nil
		}
		k, rest, ok := strings.Cut(s, "=")
		if !ok || k == "" || strings.ContainsRune(k, ' ') {
			return nil, fmt.Errorf("launch: status field %q is not key=value", clip(s))
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("launch: status field %q given twice", clip(k))
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return nil, fmt.Errorf("launch: status field %s: %w", k, err)
			}
			v, _ = strconv.Unquote(q) // QuotedPrefix returned a valid literal
			rest = rest[len(q):]
			if rest != "" && rest[0] != ' ' {
				return nil, fmt.Errorf("launch: status field %s: text after the quoted value", k)
			}
		} else {
			v, rest, _ = strings.Cut(rest, " ")
		}
		out[k] = v
		s = rest
	}
}

func appendQuoted(b []byte, k, v string) []byte {
	b = append(append(append(b, ' '), k...), '=')
	return strconv.AppendQuote(b, v)
}

func appendInt(b []byte, k string, v int) []byte {
	b = append(append(append(b, ' '), k...), '=')
	return strconv.AppendInt(b, int64(v), 10)
}

func joinInts(v ...int) string {
	var b []byte
	for i, n := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// splitInts parses exactly n integers separated by sep.
func splitInts(s, sep string, n int) ([]int, error) {
	parts := strings.Split(s, sep)
	if len(parts) != n {
		return nil, fmt.Errorf("want %d integers separated by %q", n, sep)
	}
	out := make([]int, n)
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// clip shortens text quoted in an error.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
