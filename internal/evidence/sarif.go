package evidence

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"path"
	"strings"
)

// SARIF 2.1.0 output (OASIS; what GitHub code scanning ingests). Findings
// become results of rules "ironvise/finding/<severity>", denials results
// of "ironvise/denial/<check>/<code>". A result points at the file a
// read_file observation came from when its evidence is one; otherwise at
// the session's certificate file, "<session id>.elc", which holds the
// evidence (code scanning needs a physical location to show a result).

const (
	sarifSchemaURI = "https://json.schemastore.org/sarif-2.1.0.json"
	sarifVersion   = "2.1.0"
	toolName       = "IronVise"
	toolURI        = "https://github.com/ironvise/ironvise"
)

type sarifDoc struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool              sarifTool         `json:"tool"`
	AutomationDetails sarifAutomation   `json:"automationDetails"`
	Results           []sarifResult     `json:"results"`
	Properties        sarifRunProps     `json:"properties"`
	Invocations       []sarifInvocation `json:"invocations"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifAutomation struct {
	ID string `json:"id"`
}

type sarifInvocation struct {
	ExecutionSuccessful bool `json:"executionSuccessful"`
}

type sarifRunProps struct {
	SessionID  string  `json:"session_id"`
	Goal       string  `json:"goal"`
	GoalHash   string  `json:"goal_hash"`
	PolicyHash *string `json:"policy_hash"`
	Status     string  `json:"status"`
	Sealed     bool    `json:"sealed"`
	ChainOK    bool    `json:"chain_ok"`
	TipHash    string  `json:"tip_hash"`
}

type sarifMessage struct {
	Text string `json:"text"`
}

type sarifRule struct {
	ID                   string            `json:"id"`
	Name                 string            `json:"name"`
	ShortDescription     sarifMessage      `json:"shortDescription"`
	FullDescription      sarifMessage      `json:"fullDescription"`
	DefaultConfiguration sarifRuleConfig   `json:"defaultConfiguration"`
	Help                 sarifMessage      `json:"help"`
	Properties           sarifRuleProperty `json:"properties"`
}

type sarifRuleConfig struct {
	Level string `json:"level"`
}

type sarifRuleProperty struct {
	Tags []string `json:"tags"`
	// SecuritySeverity is GitHub's numeric severity ("0.0".."10.0").
	SecuritySeverity string `json:"security-severity,omitempty"`
}

type sarifResult struct {
	RuleID              string            `json:"ruleId"`
	RuleIndex           int               `json:"ruleIndex"`
	Level               string            `json:"level"`
	Message             sarifMessage      `json:"message"`
	Locations           []sarifLocation   `json:"locations"`
	PartialFingerprints map[string]string `json:"partialFingerprints"`
	Properties          map[string]any    `json:"properties"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical  `json:"physicalLocation"`
	LogicalLocations []sarifLogical `json:"logicalLocations"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine int `json:"startLine"`
}

type sarifLogical struct {
	FullyQualifiedName string `json:"fullyQualifiedName"`
	Kind               string `json:"kind"`
}

// securitySeverity maps finding severities to GitHub's numeric scale
// (critical ≥ 9.0, high 7.0–8.9, medium 4.0–6.9, low < 4.0).
var securitySeverity = map[string]string{"critical": "9.5", "high": "8.0", "medium": "5.5", "low": "2.0"}

func sarifLevel(severity string) string {
	switch severity {
	case "critical", "high":
		return "error"
	case "medium":
		return "warning"
	}
	return "note"
}

// sarifRules assigns rule indexes in order of first use.
type sarifRules struct {
	rules []sarifRule
	index map[string]int
}

func (s *sarifRules) add(r sarifRule) int {
	if i, ok := s.index[r.ID]; ok {
		return i
	}
	s.index[r.ID] = len(s.rules)
	s.rules = append(s.rules, r)
	return len(s.rules) - 1
}

// fingerprints makes content-based fingerprints (stable across runs, so
// the same issue maps to the same alert), numbering repeats within a run.
type fingerprints map[string]int

func (f fingerprints) next(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	base := hex.EncodeToString(h[:16])
	f[base]++
	if n := f[base]; n > 1 {
		return fmt.Sprintf("%s:%d", base, n)
	}
	return base
}

func sarifLog(r *Report) *sarifDoc {
	rules := &sarifRules{index: map[string]int{}}
	fps := fingerprints{}
	results := []sarifResult{}
	for _, f := range r.Findings {
		sev := f.Severity
		idx := rules.add(sarifRule{
			ID: "ironvise/finding/" + sev, Name: camel(sev) + "SeverityFinding",
			ShortDescription:     sarifMessage{Text: sev + " severity finding reported by the audited agent"},
			FullDescription:      sarifMessage{Text: "A " + sev + " severity finding reported with the agent's complete action; high and critical findings cite observations recorded in the signed ledger."},
			DefaultConfiguration: sarifRuleConfig{Level: sarifLevel(sev)},
			Help:                 sarifMessage{Text: "Read the finding's recommendation. Verify its evidence offline with 'ironvise verify-certificate' on the session's certificate."},
			Properties:           sarifRuleProperty{Tags: []string{"security", "ironvise", "finding"}, SecuritySeverity: securitySeverity[sev]},
		})
		file, line := findingFile(&f)
		text := f.Title
		if f.Evidence != "" {
			text += "\n\nEvidence: " + f.Evidence
		}
		if f.Recommendation != "" {
			text += "\n\nRecommendation: " + f.Recommendation
		}
		results = append(results, sarifResult{
			RuleID: "ironvise/finding/" + sev, RuleIndex: idx, Level: sarifLevel(sev), Message: sarifMessage{Text: text},
			Locations:           []sarifLocation{sarifLoc(r, file, line, int64(f.ActionSeq))},
			PartialFingerprints: map[string]string{"ironvise/v1": fps.next("finding", sev, f.Title, file)},
			Properties: map[string]any{
				"severity": sev, "session_id": r.Session.ID, "action_sequence": f.ActionSeq,
				"evidence_sequence": f.EvidenceSequence, "evidence_verified": allVerified(f.Locations),
			},
		})
	}
	for _, d := range r.Denials {
		id := "ironvise/denial/" + d.Check + "/" + d.Code
		idx := rules.add(sarifRule{
			ID: id, Name: "Denied" + camel(d.Check) + camel(d.Code),
			ShortDescription:     sarifMessage{Text: "the " + d.Check + " check denied an action (" + d.Code + ")"},
			FullDescription:      sarifMessage{Text: "IronVise's " + d.Check + " check denied an action the agent proposed, with reason code " + d.Code + "; nothing was executed."},
			DefaultConfiguration: sarifRuleConfig{Level: "warning"},
			Help:                 sarifMessage{Text: "The denial names the rule and the reason. If the action was legitimate, adjust the policy or tripwire configuration; otherwise investigate why the agent proposed it."},
			Properties:           sarifRuleProperty{Tags: []string{"security", "ironvise", "denial", d.Check}},
		})
		file := ""
		if d.Action == "read_file" || d.Action == actionWriteFile {
			file = d.Target
		}
		text := "Denied by " + d.Check + ": " + d.Code + ": " + d.Message
		if d.Action != "" {
			text += "\n\nAction: " + d.Action + " " + d.Target
		}
		props := map[string]any{"session_id": r.Session.ID, "sequence": d.Sequence, "step": d.Step, "check": d.Check, "code": d.Code}
		if d.Rule != "" {
			props["rule"] = d.Rule
		}
		results = append(results, sarifResult{
			RuleID: id, RuleIndex: idx, Level: "warning", Message: sarifMessage{Text: text},
			Locations:           []sarifLocation{sarifLoc(r, file, 0, int64(d.Sequence))},
			PartialFingerprints: map[string]string{"ironvise/v1": fps.next("denial", d.Check, d.Code, d.Action, d.Target)},
			Properties:          props,
		})
	}
	if rules.rules == nil {
		rules.rules = []sarifRule{}
	}
	return &sarifDoc{
		Schema: sarifSchemaURI, Version: sarifVersion,
		Runs: []sarifRun{{
			Tool:              sarifTool{Driver: sarifDriver{Name: toolName, InformationURI: toolURI, Rules: rules.rules}},
			AutomationDetails: sarifAutomation{ID: "ironvise/" + r.Session.ID},
			Results:           results,
			Invocations:       []sarifInvocation{{ExecutionSuccessful: r.Chain.OK}},
			Properties: sarifRunProps{
				SessionID: r.Session.ID, Goal: r.Session.Goal, GoalHash: r.Session.GoalHash, PolicyHash: r.Session.PolicyHash,
				Status: r.Session.Status, Sealed: r.Session.Sealed, ChainOK: r.Chain.OK, TipHash: r.Chain.TipHash,
			},
		}},
	}
}

// findingFile returns the file and line a finding's evidence points into:
// the first cited read_file observation whose quote was found.
func findingFile(f *ReportFinding) (string, int) {
	for _, l := range f.Locations {
		if p := l.Path(); p != "" {
			return p, l.Line
		}
	}
	return "", 0
}

func allVerified(ls []Location) bool {
	for _, l := range ls {
		if !l.Verified {
			return false
		}
	}
	return true
}

// sarifLoc locates a result in file (when known) and, always, in the
// session's event log.
func sarifLoc(r *Report, file string, line int, seq int64) sarifLocation {
	loc := sarifLocation{LogicalLocations: []sarifLogical{{
		FullyQualifiedName: fmt.Sprintf("session/%s/event/%d", r.Session.ID, seq), Kind: "object",
	}}}
	if file == "" {
		loc.PhysicalLocation.ArtifactLocation.URI = r.Session.ID + ".elc"
		return loc
	}
	loc.PhysicalLocation.ArtifactLocation.URI = fileURI(file)
	if line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}
	return loc
}

// fileURI turns a path into a URI reference: relative paths stay relative
// (repository-relative for code scanning), absolute ones become file URIs.
func fileURI(p string) string {
	p = path.Clean(p)
	if path.IsAbs(p) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: p}).String()
}

// camel turns snake_case into CamelCase for rule names.
func camel(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}
