package evidence

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestHighFindingNeedsQuote is issue 23 item 6: a high finding that cites
// an earlier observation IronVise recorded, with an empty quote (or no
// quote at all), is not verified evidence. Before the rule, both passed
// pillar 5, the findings check and credential issuance.
func TestHighFindingNeedsQuote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		quotes []string
	}{
		{"empty quote", []string{""}},
		{"no quote", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			l := newTestLedger(t)
			f := newSession(t, l)
			obs := f.run("read_file", map[string]any{"path": "README"}, "", "nothing sensitive here\n")
			f.complete(finding("high", "Private key committed", "trust me", "remove it", []int64{obs}, tc.quotes))
			if c := FindingsCheck(mustEvents(t, l, f)); c.OK || !strings.Contains(c.Problem, "without a quote") {
				t.Fatalf("findings check %+v; want it failing on the missing quote", c)
			}
			if _, err := IssueVC(ctx, l, f.id); !errors.Is(err, ErrUnbackedFindings) {
				t.Fatalf("IssueVC: %v; want ErrUnbackedFindings", err)
			}
			if err := l.EndSession(ctx, f.id, ledger.StatusCompleted); err != nil {
				t.Fatal(err)
			}
			res := sealedUnverified(t, l, f.id)
			if p := res.Pillar(PillarBinding); res.Valid || p.OK || !strings.Contains(p.Problem, "non-empty quote") {
				t.Fatalf("pillar 5 %+v; want it failing on the missing quote", p)
			}
			r, err := BuildReport(ctx, l, f.id)
			if err != nil {
				t.Fatal(err)
			}
			if loc := r.Findings[0].Locations[0]; loc.Verified || !strings.Contains(loc.Problem, "no quote") {
				t.Fatalf("report location %+v; want unverified: no quote", loc)
			}
		})
	}
}

// TestLowFindingQuoteOptional: the rule is for high and critical findings
// only; a medium finding may cite an observation without a quote.
func TestLowFindingQuoteOptional(t *testing.T) {
	l := newTestLedger(t)
	f := newSession(t, l)
	obs := f.run("read_file", map[string]any{"path": "README"}, "", "log rotation: none\n")
	f.complete(finding("medium", "No log rotation", "see README", "add logrotate", []int64{obs}, nil))
	if c := FindingsCheck(mustEvents(t, l, f)); !c.OK {
		t.Fatalf("findings check %+v; want ok", c)
	}
}

func mustEvents(t *testing.T, l *ledger.Ledger, f *fixture) []ledger.Event {
	t.Helper()
	evs, err := l.Events(context.Background(), f.id, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// TestCertificateSessionFieldsBound is issue 23 item 1 for certificates:
// a header whose times or agent_loop differ from the signed events (as an
// export from an edited database would carry them, re-signed by the
// issuer) fails verification, naming the field.
func TestCertificateSessionFieldsBound(t *testing.T) {
	_, _, data := fixtureCertificate(t)
	shift := func(p *string) *string {
		tm, err := time.Parse(ledger.TimeFormat, *p)
		if err != nil {
			t.Fatal(err)
		}
		s := tm.Add(-24 * time.Hour).Format(ledger.TimeFormat)
		return &s
	}
	for _, tc := range []struct {
		name   string
		mutate func(c *Certificate)
		want   string
	}{
		{"created_at", func(c *Certificate) { c.Session.CreatedAt = *shift(&c.Session.CreatedAt) }, "created_at"},
		{"finished_at", func(c *Certificate) { c.Session.FinishedAt = shift(c.Session.FinishedAt) }, "finished_at"},
		{"sealed_at", func(c *Certificate) { c.Session.SealedAt = shift(c.Session.SealedAt) }, "sealed_at"},
		{"agent_loop", func(c *Certificate) { c.Session.AgentLoop = !c.Session.AgentLoop }, "agent_loop"},
		{"status", func(c *Certificate) { c.Session.Status = "failed" }, "status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := mustVerify(t, edit(t, data, tc.mutate), testIssuerPub(t))
			p, failed := res.FirstFailure()
			if res.Valid || !failed || !strings.Contains(p.Problem, tc.want) {
				t.Fatalf("first failure %+v; want one naming %s", p, tc.want)
			}
		})
	}
}
