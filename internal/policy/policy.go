package policy

import (
	"errors"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"github.com/ironvise/ironvise/internal/intent"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/shell"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Limits and defaults of docs/design/checks.md#policy-keys. Each is tested at
// its boundary.
const (
	// MaxFileBytes caps a policy file; a policy is configuration, not data.
	MaxFileBytes = 1 << 20
	// MaxNameRunes caps the name key.
	MaxNameRunes = 128
	// MinMaxSteps and MaxMaxSteps bound max_steps.
	MinMaxSteps = 1
	MaxMaxSteps = 1000
	// MinTimeoutSeconds and MaxTimeoutSeconds bound approval_timeout_seconds
	// and a gate's timeout_seconds.
	MinTimeoutSeconds = 1
	MaxTimeoutSeconds = 86400
	// DefaultTimeoutSeconds is the default of both timeouts.
	DefaultTimeoutSeconds = 300
	// MaxIDBytes caps a rule id (an IronVise limit: ids are recorded in
	// every check_verdict and must stay readable).
	MaxIDBytes = 128
	// MaxReasonBytes caps a rule or gate reason (an IronVise limit: the
	// reason is quoted in verdict messages, which are capped at 1 KiB).
	MaxReasonBytes = 512
	// MaxExprBytes caps a gate expression (an IronVise limit).
	MaxExprBytes = 4096
	// MaxExprDepth caps the nesting of parentheses in a gate expression.
	MaxExprDepth = 32
)

// DefaultGateID is the implicit gate of a require_approval decision that
// names no gate: it waits approval_timeout_seconds and denies on timeout
// (docs/design/checks.md#policy-precedence). A policy may not define a gate
// with this id.
const DefaultGateID = "policy-default"

// Sentinel errors. Load errors are *LoadError values; these classify the
// failures that happen before a file is parsed.
var (
	// ErrNotFound reports a policy name that is neither a shipped pack nor
	// a file in <data dir>/policies/.
	ErrNotFound = errors.New("ironvise/policy: policy not found")
	// ErrAmbiguous reports a name that is both a shipped pack and a file in
	// <data dir>/policies/; the caller must pass the file path instead.
	ErrAmbiguous = errors.New("ironvise/policy: policy name is ambiguous")
)

// OnTimeout is what an approval request resolves to when nobody answers in
// time (docs/design/checks.md#policy-keys on_timeout).
type OnTimeout string

// The on_timeout values.
const (
	OnTimeoutDeny  OnTimeout = "deny"
	OnTimeoutAllow OnTimeout = "allow"
)

// Gate is one approval gate (docs/design/checks.md#policy-keys
// approval_gates, docs/design/checks.md#approval-gates).
type Gate struct {
	// ID is unique within the policy.
	ID string
	// When is the gate expression as written; "" means the gate fires only
	// when a require_approval rule names it.
	When string
	// TimeoutSeconds is how long the request waits for a decision.
	TimeoutSeconds int
	// OnTimeout is the outcome when the request times out.
	OnTimeout OnTimeout
	// Reason is shown to the approver; may be "".
	Reason string

	when *expr // compiled at load; nil when When is ""
}

// Control is one compliance control the policy claims to support; it is
// informational and used by compliance reports.
type Control struct {
	ID       string
	Title    string
	Evidence string
}

// itemKind is the kind of a step item and of the rules that match it.
type itemKind int

const (
	kindCommand itemKind = iota
	kindPath
	kindDomain
	numKinds
)

func (k itemKind) String() string {
	return [...]string{"command", "path", "domain"}[k]
}

// defaultKey is the key that sets the default decision of a kind.
func (k itemKind) defaultKey() string {
	return "default_" + k.String() + "_decision"
}

// rule is what every command, path and domain rule has.
type rule struct {
	id       string
	index    int // zero-based position in its table, for file order
	decision verdict.Decision
	reason   string
	gate     string // "" or the id of an existing gate
}

type commandRule struct {
	rule
	programs []nameGlob
	anyProg  bool // programs contains "*": the only glob a dynamic program matches
	args     *regexp.Regexp
	// test holds options, option_value and subcommand.
	test shell.ArgTest
}

// pathKinds is a set of tripwire path kinds, as bits.
type pathKinds uint8

const (
	pkReadFile pathKinds = 1 << iota
	pkRedirectRead
	pkRedirectWrite
	pkWriteFile
	pkAll = pkReadFile | pkRedirectRead | pkRedirectWrite | pkWriteFile
)

type pathRule struct {
	rule
	globs    []*pathGlob
	prefixes []string // normalised (see normPath)
	kinds    pathKinds
}

type domainRule struct {
	rule
	hosts []string // normalised: lowercase, IDNA, no trailing dot
	cidrs []netip.Prefix
}

// Policy is a loaded, validated and compiled policy. It is immutable and
// safe for concurrent use. A nil *Policy means "no policy loaded".
type Policy struct {
	file        string
	name        string
	version     string
	description string
	sha256      string
	maxSteps    int // 0: unset

	allowed     []intent.Action
	forbidden   []intent.Action
	executables []string   // nil: off; "@base" already expanded
	exeGlobs    []nameGlob // executables, compiled
	defaults    [numKinds]verdict.Decision
	approvalTTL int

	commandRules []commandRule
	pathRules    []pathRule
	domainRules  []domainRule
	gates        []Gate
	observation  []scan.ObservationRule
	controls     []Control
	mcpToolRules []mcpToolRule
	mcpDefault   verdict.Decision
	network      *Network   // nil: no [network] section
	workspace    *Workspace // nil: no [workspace] section

	fold    bool // ASCII case folding of programs and paths (darwin, windows)
	windows bool // "\" separators and drive letters in paths
}

// File returns the name the policy was loaded from: a path, or
// "<pack>.toml" for a shipped pack.
func (p *Policy) File() string { return p.file }

// Name returns the policy's name key.
func (p *Policy) Name() string { return p.name }

// Version returns the policy's version key ("" when unset).
func (p *Policy) Version() string { return p.version }

// Description returns the policy's description key ("" when unset).
func (p *Policy) Description() string { return p.description }

// SHA256 returns the policy hash: the lowercase hex SHA-256 of the exact
// file bytes, recorded at session start.
func (p *Policy) SHA256() string { return p.sha256 }

// MaxSteps returns max_steps and whether the policy sets it
// (docs/design/checks.md#check-order: the effective limit is the minimum of
// this and the operator's).
func (p *Policy) MaxSteps() (int, bool) { return p.maxSteps, p.maxSteps > 0 }

// AllowedActions returns the actions the policy allows (all four by
// default).
func (p *Policy) AllowedActions() []intent.Action { return slices.Clone(p.allowed) }

// ForbiddenActions returns the actions the policy forbids.
func (p *Policy) ForbiddenActions() []intent.Action { return slices.Clone(p.forbidden) }

// Executables returns the executables allowlist with "@base" expanded, and
// whether it is set (when unset, the check is off).
func (p *Policy) Executables() ([]string, bool) {
	return slices.Clone(p.executables), p.executables != nil
}

// ApprovalTimeoutSeconds returns approval_timeout_seconds, the timeout of
// the implicit policy-default gate.
func (p *Policy) ApprovalTimeoutSeconds() int { return p.approvalTTL }

// Gates returns the approval gates in file order.
func (p *Policy) Gates() []Gate { return slices.Clone(p.gates) }

// Gate returns the gate with the given id. DefaultGateID names the
// implicit gate (approval_timeout_seconds, on_timeout deny).
func (p *Policy) Gate(id string) (Gate, bool) {
	if id == DefaultGateID {
		return Gate{ID: DefaultGateID, TimeoutSeconds: p.approvalTTL, OnTimeout: OnTimeoutDeny}, true
	}
	for _, g := range p.gates {
		if g.ID == id {
			return g, true
		}
	}
	return Gate{}, false
}

// ObservationRules returns the compiled observation rules in file order,
// ready for scan.ApplyRules. A rule without an id has the id
// "observation_rules[<index>]".
func (p *Policy) ObservationRules() []scan.ObservationRule { return slices.Clone(p.observation) }

// Controls returns the compliance controls in file order.
func (p *Policy) Controls() []Control { return slices.Clone(p.controls) }

// asciiLower lowercases ASCII letters only, the case folding of darwin and
// windows file names and program names
// (docs/design/checks.md#policy-precedence).
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + ('a' - 'A')
				}
			}
			return string(b)
		}
	}
	return s
}

// joinIDs renders ids for messages: a, b, c.
func joinIDs(ids []string) string { return strings.Join(ids, ", ") }
