package evidence

import (
	"bufio"
	"fmt"
	"html"
	"io"
	"strconv"
	"strings"
)

// The HTML report is one self-contained page: inline CSS, no scripts, no
// external resources (a Content-Security-Policy of default-src 'none'
// forbids any), and every value from the ledger escaped, because goals,
// observations and findings come from an agent that may be hostile.

const htmlStyle = `body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:72em;padding:0 1em;color:#1d232a}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #d5dbe1;padding-bottom:.2em}
table{border-collapse:collapse;width:100%}th,td{text-align:left;vertical-align:top;padding:.35em .6em;border-bottom:1px solid #e6eaee}
th{width:14em;color:#4b5561;font-weight:600}code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.92em;word-break:break-all}
.pre{white-space:pre-wrap}.badge{display:inline-block;padding:.05em .55em;border-radius:.8em;font-size:.85em;font-weight:600;color:#fff}
.critical{background:#8b0000}.high{background:#c62828}.medium{background:#e08600}.low{background:#607d8b}.ok{background:#2e7d32}.fail{background:#c62828}
article{border:1px solid #d5dbe1;border-radius:6px;padding:.6em 1em;margin:1em 0}article h3{margin:.2em 0 .5em;font-size:1.05em}
.muted{color:#66707a}footer{margin-top:3em;color:#66707a;font-size:.85em}`

// htmlWriter accumulates the first write error.
type htmlWriter struct {
	w   *bufio.Writer
	err error
}

func (h *htmlWriter) raw(s string) {
	if h.err == nil {
		_, h.err = h.w.WriteString(s)
	}
}

// text writes s escaped for element content and attribute values alike.
func (h *htmlWriter) text(s string) { h.raw(html.EscapeString(s)) }

func (h *htmlWriter) row(label, value string, class string) {
	h.raw("<tr><th>")
	h.text(label)
	h.raw(`</th><td class="`)
	h.text(class)
	h.raw(`">`)
	h.text(value)
	h.raw("</td></tr>\n")
}

func (h *htmlWriter) badge(class, label string) {
	h.raw(`<span class="badge `)
	h.text(class)
	h.raw(`">`)
	h.text(label)
	h.raw("</span>")
}

// cell is one data cell of a table row: its text and its class ("" for
// none).
type cell struct{ text, class string }

// cells writes a table row of data cells.
func (h *htmlWriter) cells(cs ...cell) {
	h.raw("<tr>")
	for _, c := range cs {
		if c.class == "" {
			h.raw("<td>")
		} else {
			h.raw(`<td class="` + c.class + `">`)
		}
		h.text(c.text)
		h.raw("</td>")
	}
	h.raw("</tr>\n")
}

func okClass(ok bool) (string, string) {
	if ok {
		return "ok", "ok"
	}
	return "fail", "FAILED"
}

func writeHTML(w io.Writer, r *Report) error {
	h := &htmlWriter{w: bufio.NewWriter(w)}
	h.head(r)
	h.session(&r.Session)
	h.verification(&r.Chain)
	h.summary(&r.Summary)
	h.actions(r.Actions, r.Summary.Executed)
	h.findings(r.Findings)
	h.denials(r.Denials)
	h.egress(r.Egress)
	h.clientEvents(r.ClientEvents)
	h.raw("<footer>")
	h.text(r.Format + " · generated " + r.GeneratedAt + " · verify offline: ironvise report " + r.Session.ID + " --format certificate, then ironvise verify-certificate FILE --issuer-key KEY")
	h.raw("</footer>\n</body>\n</html>\n")
	if h.err != nil {
		return h.err
	}
	return h.w.Flush()
}

// head writes the document head and the title line: session, status and
// the CI gate.
func (h *htmlWriter) head(r *Report) {
	s := &r.Session
	h.raw(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>IronVise report `)
	h.text(s.ID)
	h.raw("</title>\n<style>" + htmlStyle + "</style>\n</head>\n<body>\n<h1>IronVise audit report</h1>\n<p class=\"muted\">Session <code>")
	h.text(s.ID)
	h.raw("</code> · ")
	h.text(s.Status)
	if s.Sealed {
		h.raw(" · sealed")
	}
	h.raw(" · CI gate ")
	gateClass := "ok"
	if r.Summary.Gate == "fail" {
		gateClass = "fail"
	}
	h.badge(gateClass, r.Summary.Gate)
	h.raw("</p>\n")
}

func (h *htmlWriter) session(s *SessionInfo) {
	h.raw("<h2>Session</h2>\n<table>\n")
	h.row("Goal", s.Goal, "pre")
	h.row("Goal hash", s.GoalHash, "mono")
	h.row("Policy", policyLabel(s), "")
	h.row("Policy hash", strOr(s.PolicyHash, "no policy"), "mono")
	h.row("Status", s.Status, "")
	h.row("Created", s.CreatedAt, "mono")
	h.row("Finished", strOr(s.FinishedAt, "—"), "mono")
	h.row("Sealed", strOr(s.SealedAt, "not sealed"), "mono")
	h.row("Model", strOr(s.LLMBackend, "—")+" / "+strOr(s.LLMModel, "—"), "")
	h.row("Sandbox tier", s.SandboxTier, "")
	h.row("Session key", s.SessionDID, "mono")
	h.row("Issuer key id", strOr(nonEmpty(s.IssuerKeyID), "—"), "mono")
	h.row("Events", strconv.Itoa(s.EventCount), "")
	h.raw("</table>\n")
}

func (h *htmlWriter) verification(c *ChainStatus) {
	h.raw("<h2>Verification</h2>\n<table>\n")
	for _, ck := range []struct {
		name string
		ok   bool
	}{{"Chain (hashes, links, sequences)", c.ChainOK}, {"Signatures and key rotations", c.SignaturesOK}, {"Goal anchoring", c.GoalOK}, {"Log inclusion", c.LogOK}, {"Seal completeness", c.SealOK}} {
		cls, label := okClass(ck.ok)
		h.raw("<tr><th>")
		h.text(ck.name)
		h.raw("</th><td>")
		h.badge(cls, label)
		h.raw("</td></tr>\n")
	}
	h.row("Tip hash", c.TipHash, "mono")
	h.row("Checked against checkpoint", strconv.FormatInt(c.CheckedTreeSize, 10), "")
	if c.Error != nil {
		where := "not tied to one event"
		if c.Error.Sequence != nil {
			where = "sequence " + strconv.FormatInt(*c.Error.Sequence, 10)
		}
		h.row("First failure", c.Error.Check+" check, "+where+": "+c.Error.Problem, "pre")
	}
	h.raw("</table>\n")
}

func (h *htmlWriter) summary(sum *Summary) {
	h.raw("<h2>Summary</h2>\n<table>\n")
	h.row("Steps / intents", fmt.Sprintf("%d / %d", sum.Steps, sum.Intents), "")
	h.row("Executed actions", strconv.Itoa(sum.Executed), "")
	h.row("Denials", fmt.Sprintf("%d (schema %d, policy %d, tripwire %d, approval %d, guard %d, prompt scan %d)", sum.Denied,
		sum.DeniedBy["schema"], sum.DeniedBy["policy"], sum.DeniedBy["tripwire"], sum.DeniedBy["approval"], sum.DeniedBy["guard"], sum.DeniedBy["prompt_scan"]), "")
	h.row("Sandbox runs", fmt.Sprintf("%d ok, %d aborted, %d timeout, %d permissive", sum.SandboxRuns["ok"], sum.SandboxRuns["aborted"], sum.SandboxRuns["timeout"], sum.SandboxRuns["permissive"]), "")
	h.row("Suspicious observations", strconv.Itoa(sum.SuspiciousObservations), "")
	h.row("Findings", fmt.Sprintf("%d critical, %d high, %d medium, %d low", sum.Findings["critical"], sum.Findings["high"], sum.Findings["medium"], sum.Findings["low"]), "")
	if sum.Stop != nil {
		h.row("Stopped by", sum.Stop.Code+": "+sum.Stop.Message, "pre")
	}
	if sum.FindingsProblem != "" {
		h.row("Findings problem", sum.FindingsProblem, "pre")
	}
	h.row("Verifiable credential", map[bool]string{true: "issued", false: "none"}[sum.Credential], "")
	h.raw("</table>\n")
}

// policyLabel is the policy's name, or why the report cannot name it.
func policyLabel(s *SessionInfo) string {
	switch {
	case s.PolicyHash == nil:
		return "no policy"
	case s.PolicyName != nil:
		return *s.PolicyName + " (the pack or data-directory policy with this hash)"
	}
	return "name unknown (the session recorded only the hash, and no known policy has it)"
}

// actions lists the committed actions with how each ended; the count is
// Summary.Executed, the one definition of an executed action.
func (h *htmlWriter) actions(as []Action, executed int) {
	h.raw("<h2>Executed actions</h2>\n")
	if len(as) == 0 {
		h.raw("<p class=\"muted\">No action was committed.</p>\n")
		return
	}
	h.raw("<p class=\"muted\">")
	h.text(fmt.Sprintf("%d of %d committed action(s) executed. A command the sandbox could not start, or a read the tripwire denied at execution, is listed and not counted.", executed, len(as)))
	h.raw("</p>\n<table>\n<tr><th>Seq</th><th>Step</th><th>Action</th><th>Verdict</th><th>Outcome</th><th>Exit code</th><th>Duration</th></tr>\n")
	for _, a := range as {
		h.cells(
			cell{strconv.FormatUint(a.Sequence, 10), ""},
			cell{strconv.Itoa(a.Step), ""},
			cell{a.Action + " " + a.Target, "mono pre"},
			cell{a.Verdict, ""},
			cell{actionOutcome(a), "pre"},
			cell{intOr(a.ExitCode, "—"), ""},
			cell{durationOr(a.DurationMS), ""},
		)
	}
	h.raw("</table>\n")
}

// actionOutcome says how a committed action ended.
func actionOutcome(a Action) string {
	out := "executed"
	if !a.Executed {
		out = "not executed"
	}
	if a.Status != "" {
		out += " · sandbox " + a.Status
	}
	if a.Signal != "" {
		out += " · " + a.Signal
	}
	if a.Reason != "" {
		out += " · " + a.Reason
	}
	return out
}

func intOr(v *int, none string) string {
	if v == nil {
		return none
	}
	return strconv.Itoa(*v)
}

func durationOr(ms *int64) string {
	if ms == nil {
		return "—"
	}
	return strconv.FormatInt(*ms, 10) + " ms"
}

func (h *htmlWriter) findings(fs []ReportFinding) {
	h.raw("<h2>Findings</h2>\n")
	if len(fs) == 0 {
		h.raw("<p class=\"muted\">No findings were reported.</p>\n")
	}
	for i, f := range fs {
		h.raw("<article>\n<h3>")
		h.badge(f.Severity, f.Severity)
		h.raw(" ")
		h.text(strconv.Itoa(i+1) + ". " + f.Title)
		h.raw("</h3>\n<table>\n")
		h.row("Evidence", f.Evidence, "pre")
		h.row("Recommendation", f.Recommendation, "pre")
		h.row("Reported at", "sequence "+strconv.FormatUint(f.ActionSeq, 10), "")
		for _, l := range f.Locations {
			h.row("Observation "+strconv.FormatInt(l.Sequence, 10), locationDetail(l), "pre")
		}
		h.raw("</table>\n</article>\n")
	}
}

// locationDetail describes one cited observation: whether the citation was
// verified (and why not), what the action touched, the line and the quote.
func locationDetail(l Location) string {
	detail := "not verified"
	if l.Verified {
		detail = "verified"
	} else if l.Problem != "" {
		detail += " (" + l.Problem + ")"
	}
	if l.Action != "" {
		detail += " · " + l.Action + " " + l.Target
	}
	if l.Line > 0 {
		detail += " · line " + strconv.Itoa(l.Line)
	}
	if l.Quote != "" {
		detail += "\nquote: " + l.Quote
	}
	return detail
}

func (h *htmlWriter) denials(ds []Denial) {
	h.raw("<h2>Denials</h2>\n")
	if len(ds) == 0 {
		h.raw("<p class=\"muted\">No action was denied.</p>\n")
		return
	}
	h.raw("<table>\n<tr><th>Seq</th><th>Step</th><th>Check</th><th>Code</th><th>Action</th><th>Message</th></tr>\n")
	for _, d := range ds {
		code := d.Code
		if d.Rule != "" {
			code += " (" + d.Rule + ")"
		}
		h.cells(
			cell{strconv.FormatUint(d.Sequence, 10), ""},
			cell{strconv.Itoa(d.Step), ""},
			cell{d.Check, ""},
			cell{code, "mono"},
			cell{d.Action + " " + d.Target, "mono pre"},
			cell{d.Message, "pre"},
		)
	}
	h.raw("</table>\n")
}

// clientEvents lists the events a client appended through the API,
// labelled apart: a client's words are recorded, never evidence.
func (h *htmlWriter) clientEvents(cs []ClientEvent) {
	if len(cs) == 0 {
		return
	}
	h.raw("<h2>Appended by a client</h2>\n<p class=\"muted\">")
	h.text("These events were appended through the API as the client wrote them. IronVise did not produce them and no finding may cite them.")
	h.raw("</p>\n<table>\n<tr><th>Seq</th><th>Type</th><th>Note</th></tr>\n")
	for _, c := range cs {
		note := c.Note
		if c.Inferred {
			note = strings.TrimSpace("origin inferred (written before origins were recorded). " + note)
		}
		h.cells(cell{strconv.FormatUint(c.Sequence, 10), ""}, cell{c.Type, ""}, cell{note, "pre"})
	}
	h.raw("</table>\n")
}
