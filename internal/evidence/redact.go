package evidence

import "github.com/ironvise/ironvise/internal/redact"

// redactReport passes every text of a report through the session's
// redactor. The agent records events redacted already; a session recorded
// before that, or text that reached the ledger another way (the goal, an
// external agent's intent), must still not leave in a report. Quotes and
// locations are redacted after they were verified against the ledger, so a
// finding keeps its verdict; hashes, ids and counts are not text and stay.
func redactReport(r *Report, red *redact.Redactor) {
	r.Session.Goal = red.String(r.Session.Goal)
	for i := range r.Findings {
		f := &r.Findings[i]
		f.Title, f.Evidence, f.Recommendation = red.String(f.Title), red.String(f.Evidence), red.String(f.Recommendation)
		for j := range f.EvidenceQuotes {
			f.EvidenceQuotes[j] = red.String(f.EvidenceQuotes[j])
		}
		for j := range f.Locations {
			l := &f.Locations[j]
			l.Target, l.Quote = red.String(l.Target), red.String(l.Quote)
		}
	}
	for i := range r.Denials {
		d := &r.Denials[i]
		d.Message, d.Target = red.String(d.Message), red.String(d.Target)
	}
	for i := range r.Actions {
		a := &r.Actions[i]
		a.Target, a.Reason = red.String(a.Target), red.String(a.Reason)
	}
	if st := r.Summary.Stop; st != nil {
		st.Message = red.String(st.Message)
	}
	r.Summary.FindingsProblem = red.String(r.Summary.FindingsProblem)
}
