package evidence

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// GitHub Actions workflow commands: "::level prop=v,prop=v::message", one
// per line. Escaping follows the runner's rules: in the message %, CR and
// LF are percent-encoded; in property values also ':' and ','. Every value
// from the ledger is escaped, so a finding cannot end its line and issue
// a command of its own (an agent-written "::set-env" stays data).

func escapeGHData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeGHProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

func ghLevel(severity string) string {
	switch severity {
	case "critical", "high":
		return "error"
	case "medium":
		return "warning"
	}
	return "notice"
}

func ghCommand(w *bufio.Writer, level string, props [][2]string, msg string) {
	w.WriteString("::" + level)
	for i, p := range props {
		if i == 0 {
			w.WriteString(" ")
		} else {
			w.WriteString(",")
		}
		w.WriteString(p[0] + "=" + escapeGHProperty(p[1]))
	}
	w.WriteString("::" + escapeGHData(msg) + "\n")
}

func writeGitHubActions(w io.Writer, r *Report) error {
	b := bufio.NewWriter(w)
	for _, f := range r.Findings {
		var props [][2]string
		if file, line := findingFile(&f); file != "" {
			props = append(props, [2]string{"file", file})
			if line > 0 {
				props = append(props, [2]string{"line", fmt.Sprint(line)})
			}
		}
		props = append(props, [2]string{"title", "IronVise " + f.Severity + ": " + f.Title})
		msg := f.Evidence
		if f.Recommendation != "" {
			msg += "\nRecommendation: " + f.Recommendation
		}
		msg += fmt.Sprintf("\n(session %s, sequence %d)", r.Session.ID, f.ActionSeq)
		ghCommand(b, ghLevel(f.Severity), props, msg)
	}
	for _, d := range r.Denials {
		props := [][2]string{{"title", "IronVise denied by " + d.Check + " (" + d.Code + ")"}}
		msg := d.Message
		if d.Action != "" {
			msg = d.Action + " " + d.Target + ": " + msg
		}
		ghCommand(b, "notice", props, msg)
	}
	chain := "chain verified"
	if !r.Chain.OK {
		chain = "CHAIN VERIFICATION FAILED"
	}
	sum := &r.Summary
	level := "notice"
	if !r.Chain.OK || sum.Gate == "fail" {
		level = "error"
	}
	ghCommand(b, level, [][2]string{{"title", "IronVise session " + r.Session.ID}}, fmt.Sprintf(
		"%s: %d finding(s) (%d critical, %d high, %d medium, %d low), %d denial(s), %s, CI gate %s",
		r.Session.Status, len(r.Findings), sum.Findings["critical"], sum.Findings["high"], sum.Findings["medium"], sum.Findings["low"],
		sum.Denied, chain, sum.Gate))
	return b.Flush()
}

// GitLab Code Quality: a JSON array of issues (description, check_name,
// fingerprint, severity, location.path, location.lines.begin).

type gitlabIssue struct {
	Type        string         `json:"type"`
	CheckName   string         `json:"check_name"`
	Description string         `json:"description"`
	Content     gitlabContent  `json:"content"`
	Categories  []string       `json:"categories"`
	Severity    string         `json:"severity"`
	Fingerprint string         `json:"fingerprint"`
	Location    gitlabLocation `json:"location"`
}

type gitlabContent struct {
	Body string `json:"body"`
}

type gitlabLocation struct {
	Path  string      `json:"path"`
	Lines gitlabLines `json:"lines"`
}

type gitlabLines struct {
	Begin int `json:"begin"`
}

// gitlabSeverity maps finding severities to GitLab's scale (info, minor,
// major, critical, blocker).
var gitlabSeverity = map[string]string{"critical": "blocker", "high": "critical", "medium": "major", "low": "minor"}

func gitlabIssues(r *Report) []gitlabIssue {
	fps := fingerprints{}
	out := []gitlabIssue{}
	for _, f := range r.Findings {
		file, line := findingFile(&f)
		if file == "" {
			file = r.Session.ID + ".elc"
		}
		sev := gitlabSeverity[f.Severity]
		if sev == "" {
			sev = "info"
		}
		out = append(out, gitlabIssue{
			Type: "issue", CheckName: "ironvise/finding/" + f.Severity, Description: f.Title,
			Content:     gitlabContent{Body: fmt.Sprintf("%s\n\nRecommendation: %s\n\nSession %s, sequence %d.", f.Evidence, f.Recommendation, r.Session.ID, f.ActionSeq)},
			Categories:  []string{"Security"},
			Severity:    sev,
			Fingerprint: fps.next("finding", f.Severity, f.Title, file),
			Location:    gitlabLocation{Path: file, Lines: gitlabLines{Begin: max(line, 1)}},
		})
	}
	for _, d := range r.Denials {
		file := r.Session.ID + ".elc"
		if (d.Action == "read_file" || d.Action == actionWriteFile) && d.Target != "" {
			file = d.Target
		}
		desc := "Denied by " + d.Check + " (" + d.Code + "): " + d.Message
		out = append(out, gitlabIssue{
			Type: "issue", CheckName: "ironvise/denial/" + d.Check + "/" + d.Code, Description: desc,
			Content:     gitlabContent{Body: fmt.Sprintf("Action: %s %s\n\nSession %s, sequence %d, step %d.", d.Action, d.Target, r.Session.ID, d.Sequence, d.Step)},
			Categories:  []string{"Security"},
			Severity:    "info",
			Fingerprint: fps.next("denial", d.Check, d.Code, d.Action, d.Target),
			Location:    gitlabLocation{Path: file, Lines: gitlabLines{Begin: 1}},
		})
	}
	return out
}
