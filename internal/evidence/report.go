package evidence

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
)

// ReportFormatVersion names the JSON report layout.
const ReportFormatVersion = "ironvise-report/v1"

// Report is the json report of docs/design/ledger.md#evidence-exports and the
// body of the API's report route: the session, its findings, a verdict
// summary and the chain status. The other formats render it.
type Report struct {
	Format      string      `json:"format"`
	GeneratedAt string      `json:"generated_at"`
	Session     SessionInfo `json:"session"`
	// Findings are those of the session's complete action(s), in order.
	Findings []ReportFinding `json:"findings"`
	Summary  Summary         `json:"summary"`
	// Actions lists every action IronVise committed other than complete,
	// in ledger order, each with whether it counts as executed.
	Actions []Action `json:"actions"`
	// Denials lists every deny verdict, in ledger order.
	Denials []Denial `json:"denials"`
	// Egress lists the connections of the session's commands through the
	// egress proxy (egress events), in ledger order; absent when there
	// were none.
	Egress []EgressConnection `json:"egress,omitempty"`
	// ClientEvents lists, labelled, the events a client appended through
	// the API: not IronVise's record of anything, never evidence.
	ClientEvents []ClientEvent `json:"client_events"`
	Chain        ChainStatus   `json:"chain"`
}

// Gate reports whether the CI gate fails: any finding is high or critical
// (docs/design/ledger.md#evidence-exports: report exits 1).
func (r *Report) Gate() bool {
	for _, f := range r.Findings {
		if NeedsEvidence(f.Severity) {
			return true
		}
	}
	return false
}

// SessionInfo is the session header (docs/design/api.md#session-shape field
// names).
type SessionInfo struct {
	ID               string  `json:"id"`
	Goal             string  `json:"goal"`
	GoalHash         string  `json:"goal_hash"`
	Status           string  `json:"status"`
	LLMBackend       *string `json:"llm_backend"`
	LLMModel         *string `json:"llm_model"`
	CreatedAt        string  `json:"created_at"`
	FinishedAt       *string `json:"finished_at"`
	PolicyHash       *string `json:"policy_hash"`
	SessionPublicKey string  `json:"session_public_key"`
	SessionDID       string  `json:"session_did"`
	Sealed           bool    `json:"sealed"`
	SealedAt         *string `json:"sealed_at"`
	EventCount       int     `json:"event_count"`
	AgentLoop        bool    `json:"agent_loop"`
	SandboxTier      string  `json:"sandbox_tier"`
	// PolicyName names the shipped pack or data-directory policy whose
	// bytes have the recorded hash; nil when none does, or the report was
	// built without a way to look (ReportOptions.PolicyName). The ledger
	// records only the hash, so the name is matched, never signed.
	PolicyName *string `json:"policy_name"`
	// IssuerKeyID names the instance issuer key that signs the session's
	// seal and its certificate (ledger.KeyID).
	IssuerKeyID string `json:"issuer_key_id"`
}

// Finding is one finding of a complete action
// (docs/design/checks.md#intent-model), with the sequence of the action that
// reported it.
type Finding struct {
	ActionSeq        uint64   `json:"action_seq"`
	Severity         string   `json:"severity"`
	Title            string   `json:"title"`
	Evidence         string   `json:"evidence"`
	Recommendation   string   `json:"recommendation"`
	EvidenceSequence []int64  `json:"evidence_sequence"`
	EvidenceQuotes   []string `json:"evidence_quotes"`
}

// ReportFinding is a finding with where its evidence is.
type ReportFinding struct {
	Finding
	// Locations resolves each cited sequence.
	Locations []Location `json:"locations"`
}

// Location resolves one cited observation: the action that produced it
// and, for a quote found in it, the line (for read_file, the file's line).
type Location struct {
	Sequence int64 `json:"sequence"`
	// Action and Target are the producing action's name and its command,
	// path or URL ("" when the sequence is not an observation).
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
	// Line is the 1-based line of the quote in the observation (0: no
	// quote or not found).
	Line  int    `json:"line,omitempty"`
	Quote string `json:"quote,omitempty"`
	// Verified is true when the sequence names an observation IronVise
	// recorded from an action it executed in this session
	// (ledger.ExecutedObservation) and the quote (if any) is a substring
	// of it.
	Verified bool `json:"verified"`
	// Origin is the cited observation's origin ("ironvise", "client",
	// "legacy"; "" when the sequence is not an observation).
	Origin string `json:"origin,omitempty"`
	// Problem says why the location is not verified.
	Problem string `json:"problem,omitempty"`
}

// Path returns the file a location points into: the read_file path, or "".
func (l Location) Path() string {
	if l.Action == "read_file" || l.Action == actionWriteFile {
		return l.Target
	}
	return ""
}

// Denial is one deny verdict.
type Denial struct {
	Sequence uint64 `json:"sequence"`
	Step     int    `json:"step"`
	Check    string `json:"check"`
	Phase    string `json:"phase"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Rule     string `json:"rule,omitempty"`
	// Action and Target describe the denied intent ("" when it could not
	// be parsed, or for the prompt scan).
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
}

// Summary counts what happened in the session.
type Summary struct {
	// Status is the session's outcome; Stop what ended it, when recorded.
	Status string `json:"status"`
	Stop   *Stop  `json:"stop"`
	// Steps is the highest step number; Intents counts proposals.
	Steps   int `json:"steps"`
	Intents int `json:"intents"`
	// Executed counts the executed actions (ActionExecuted): committed,
	// not complete, and actually started.
	Executed int `json:"executed"`
	// Denied counts deny verdicts; DeniedBy by check (every check listed).
	Denied   int            `json:"denied"`
	DeniedBy map[string]int `json:"denied_by"`
	// Verdicts counts verdicts by decision.
	Verdicts map[string]int `json:"verdicts"`
	// SandboxRuns counts sandbox results by status.
	SandboxRuns map[string]int `json:"sandbox_runs"`
	// SuspiciousObservations counts observations the scanner flagged.
	SuspiciousObservations int `json:"suspicious_observations"`
	// Findings counts findings by severity (every severity listed).
	Findings map[string]int `json:"findings"`
	// HighestSeverity is "" without findings.
	HighestSeverity string `json:"highest_severity"`
	// Gate is "fail" when a finding is high or critical, else "pass".
	Gate string `json:"gate"`
	// Credential reports a verifiable_credential event.
	Credential bool `json:"verifiable_credential"`
	// FindingsProblem names a complete action whose findings could not be
	// read ("" when all could).
	FindingsProblem string `json:"findings_problem,omitempty"`
}

// Stop is the recorded reason a session ended early.
type Stop struct {
	Sequence uint64 `json:"sequence"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

// ChainStatus is the session's verification
// (docs/design/ledger.md#verification; docs/design/api.md#verify-and-evidence
// VerifyResult names).
type ChainStatus struct {
	OK              bool        `json:"ok"`
	EventCount      int         `json:"event_count"`
	TipHash         string      `json:"tip_hash"`
	Sealed          bool        `json:"sealed"`
	ChainOK         bool        `json:"chain_ok"`
	SignaturesOK    bool        `json:"signatures_ok"`
	GoalOK          bool        `json:"goal_ok"`
	LogOK           bool        `json:"log_ok"`
	SealOK          bool        `json:"seal_ok"`
	CheckedTreeSize int64       `json:"checked_tree_size"`
	Error           *ChainError `json:"error"`
}

// ChainError is the first failed check.
type ChainError struct {
	Check    string `json:"check"`
	Sequence *int64 `json:"sequence"`
	Problem  string `json:"problem"`
}

// chainStatus converts a ledger verification report.
func chainStatus(r *ledger.Report) ChainStatus {
	c := ChainStatus{
		OK: r.OK(), EventCount: r.EventCount, TipHash: r.TipHash.String(), Sealed: r.Sealed,
		ChainOK: r.Chain.OK, SignaturesOK: r.Signatures.OK, GoalOK: r.Goal.OK, LogOK: r.Log.OK, SealOK: r.Seal.OK,
		CheckedTreeSize: r.CheckedTreeSize,
	}
	if name, ck, failed := r.FirstFailure(); failed {
		c.Error = chainError(name, ck)
	}
	return c
}

// chainError reports check name's failure c.
func chainError(name string, c ledger.Check) *ChainError {
	e := &ChainError{Check: name, Problem: c.Problem}
	if c.Seq >= 0 {
		seq := c.Seq
		e.Sequence = &seq
	}
	return e
}

// exportedSession reads session id for an export (what names it in
// errors). The instance chain is refused: it is verified, never exported.
func exportedSession(ctx context.Context, l *ledger.Ledger, id uuid.UUID, what string) (*ledger.Session, error) {
	if id == ledger.InstanceSessionID {
		return nil, fmt.Errorf("evidence: %s: %w", what, ErrInstanceChain)
	}
	s, err := l.Session(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("evidence: %s: %w", what, err)
	}
	return s, nil
}

// ReportOptions adds what the ledger does not hold to a report.
type ReportOptions struct {
	// PolicyName returns the name of the policy whose SHA-256 hex is
	// hash, or "" when none is known; nil leaves the name out.
	PolicyName func(hash string) string
}

// BuildReport reads and verifies a session and builds its report. An
// unknown session is ledger.ErrNotFound.
func BuildReport(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*Report, error) {
	return BuildReportWith(ctx, l, id, ReportOptions{})
}

// BuildReportWith is BuildReport with the additions of opt.
func BuildReportWith(ctx context.Context, l *ledger.Ledger, id uuid.UUID, opt ReportOptions) (*Report, error) {
	r, err := buildReport(ctx, l, id, time.Now())
	if err != nil {
		return nil, err
	}
	if opt.PolicyName != nil && r.Session.PolicyHash != nil {
		r.Session.PolicyName = nonEmpty(opt.PolicyName(*r.Session.PolicyHash))
	}
	return r, nil
}

func buildReport(ctx context.Context, l *ledger.Ledger, id uuid.UUID, now time.Time) (*Report, error) {
	r, _, _, err := readReport(ctx, l, id, now)
	return r, err
}

// ReportAndVerification is BuildReport and VerifySession of session id
// from one read of its events and one verification of its chain (a
// `--json` result carries both).
func ReportAndVerification(ctx context.Context, l *ledger.Ledger, id uuid.UUID) (*Report, *Verification, error) {
	r, vr, evs, err := readReport(ctx, l, id, time.Now())
	if err != nil {
		return nil, nil, err
	}
	return r, verification(vr, findingsCheckOf(id, evs)), nil
}

// readReport builds the report of session id, returning with it the
// ledger's verification and the events it was built from.
func readReport(ctx context.Context, l *ledger.Ledger, id uuid.UUID, now time.Time) (*Report, *ledger.Report, []ledger.Event, error) {
	s, err := exportedSession(ctx, l, id, "report")
	if err != nil {
		return nil, nil, nil, err
	}
	evs, err := l.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("evidence: report: %w", err)
	}
	vr, err := l.VerifySession(ctx, id)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("evidence: report: %w", err)
	}
	r := assemble(s, evs, chainStatus(&vr), now)
	r.Session.IssuerKeyID = ledger.KeyID(l.IssuerPublicKey())
	return r, &vr, evs, nil
}

// IsNotFound reports whether err means the session does not exist.
func IsNotFound(err error) bool { return errors.Is(err, ledger.ErrNotFound) }
