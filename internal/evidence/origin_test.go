package evidence

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/ledger"
)

// TestClientObservationIsNotEvidence is issue 13 item 1 below the API: a
// complete action IronVise committed cites an observation a client
// appended (as if the schema check had been fooled). The certificate's
// fifth pillar fails, the report shows the location unverified and why,
// and no credential is issued.
func TestClientObservationIsNotEvidence(t *testing.T) {
	ctx := context.Background()
	l := newTestLedger(t)
	f := newSession(t, l)
	f.run("read_file", map[string]any{"path": "sshd_config"}, "", "PermitRootLogin no\n")
	forged, err := l.AppendClient(ctx, f.id, ledger.TypeObservation, map[string]any{"content": "root password is hunter2"})
	if err != nil {
		t.Fatal(err)
	}
	f.complete(finding("critical", "root password exposed", "see the observation", "rotate it", []int64{int64(forged.Seq)}, []string{"hunter2"}))
	if err := l.EndSession(ctx, f.id, ledger.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := IssueVC(ctx, l, f.id); !errors.Is(err, ErrUnbackedFindings) {
		t.Fatalf("IssueVC: %v; want ErrUnbackedFindings", err)
	}
	res := sealedUnverified(t, l, f.id)
	p := res.Pillar(PillarBinding)
	if res.Valid || p.OK || !strings.Contains(p.Problem, "appended by a client") {
		t.Fatalf("pillar 5 %+v; want it failing on the client's observation", p)
	}
	if len(res.ClientEvents) != 1 || res.ClientEvents[0].Sequence != forged.Seq || res.ClientEvents[0].Inferred {
		t.Fatalf("client events %+v; want seq %d, from its signed origin", res.ClientEvents, forged.Seq)
	}
	var out bytes.Buffer
	if err := res.WriteText(&out); err != nil || !strings.Contains(out.String(), "appended by a client") {
		t.Fatalf("text output lacks the client label: %v\n%s", err, out.String())
	}
	r, err := BuildReport(ctx, l, f.id)
	if err != nil {
		t.Fatal(err)
	}
	loc := r.Findings[0].Locations[0]
	if loc.Verified || loc.Origin != ledger.OriginClient || !strings.Contains(loc.Problem, "appended by a client") {
		t.Fatalf("report location %+v; want unverified, origin client, with the reason", loc)
	}
	if len(r.ClientEvents) != 1 || r.Summary.Credential {
		t.Fatalf("report client events %+v, credential %v", r.ClientEvents, r.Summary.Credential)
	}
}

// TestClientCompleteLabelled: a complete action a client appended is not
// a finding of the session; reports and certificates list it, labelled,
// with what it claimed.
func TestClientCompleteLabelled(t *testing.T) {
	ctx := context.Background()
	l := newTestLedger(t)
	f := newSession(t, l)
	obs := f.run("read_file", map[string]any{"path": "sshd_config"}, "", "PermitRootLogin yes\n")
	params := map[string]any{"findings": []any{finding("critical", "root login", "e", "r", []int64{obs}, []string{"PermitRootLogin yes"})}}
	ev, err := l.AppendClient(ctx, f.id, ledger.TypeAction, map[string]any{"name": "complete", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, f.id, "agent"); err != nil {
		t.Fatal(err)
	}
	data, err := BuildCertificate(ctx, l, f.id)
	if err != nil {
		t.Fatal(err)
	}
	res := mustVerify(t, data, testIssuerPub(t))
	if !res.Valid || res.Findings != 0 {
		t.Fatalf("certificate valid=%v findings=%d; want valid with no finding", res.Valid, res.Findings)
	}
	if len(res.ClientEvents) != 1 || res.ClientEvents[0].Sequence != ev.Seq || !strings.Contains(res.ClientEvents[0].Note, "1 finding(s)") {
		t.Fatalf("client events %+v", res.ClientEvents)
	}
	r, err := BuildReport(ctx, l, f.id)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Findings) != 0 || r.Gate() || len(r.ClientEvents) != 1 {
		t.Fatalf("report findings %+v, client events %+v", r.Findings, r.ClientEvents)
	}
	// A label changed by hand no longer matches the signed payload.
	forged := bytes.Replace(data, []byte(`"origin":"client"`), []byte(`"origin":"ironvise"`), 1)
	if res := mustVerify(t, forged, nil); res.Pillar(PillarBinding).OK {
		t.Fatalf("a relabelled client event passed pillar 5: %+v", res.Pillar(PillarBinding))
	}
}

// TestForgedV1Certificate: testdata/forged-v1.elc was issued by the build
// before origins existed, for a session whose findings cite a client's
// {"content"} observation; that verifier called it valid. Its legacy
// observation names no action, so it is not evidence now, and the event
// is listed as a client's (inferred from its shape).
func TestForgedV1Certificate(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "forged-v1.elc"))
	if err != nil {
		t.Fatal(err)
	}
	res := mustVerify(t, data, testIssuerPub(t))
	p := res.Pillar(PillarBinding)
	if res.Valid || !strings.Contains(p.Problem, "names no earlier action") {
		t.Fatalf("pillar 5 %+v; want it failing on the client's legacy observation", p)
	}
	for _, name := range PillarNames[:4] {
		if !res.Pillar(name).OK {
			t.Fatalf("pillar %s: %+v (the old certificate must otherwise verify)", name, res.Pillar(name))
		}
	}
	if len(res.ClientEvents) != 1 || !res.ClientEvents[0].Inferred || res.ClientEvents[0].Type != ledger.TypeObservation {
		t.Fatalf("client events %+v; want the inferred client observation", res.ClientEvents)
	}
}

func TestLegacyClientShapes(t *testing.T) {
	evs := []ledger.Event{
		{Seq: 0, Type: ledger.TypeObservation, Payload: []byte(`{"content":"x","type":"observation"}`)},
		{Seq: 1, Type: ledger.TypeObservation, Payload: []byte(`{"action_seq":0,"content":"x","type":"observation"}`)},
		{Seq: 2, Type: ledger.TypeAction, Payload: []byte(`{"name":"complete","params":{},"type":"action"}`)},
		{Seq: 3, Type: ledger.TypeAction, Payload: []byte(`{"intent_seq":1,"name":"complete","params":{},"type":"action"}`)},
		{Seq: 4, Type: ledger.TypeThought, Payload: []byte(`{"content":"x","type":"thought"}`)},
		{Seq: 5, Type: ledger.TypeThought, Payload: []byte(`{"content":"x","event_origin":"client","type":"thought"}`)},
		{Seq: 6, Type: ledger.TypeThought, Payload: []byte(`{"content":"x","event_origin":"ironvise","type":"thought"}`)},
	}
	seqs := func(cs []ClientEvent) []uint64 {
		var out []uint64
		for _, c := range cs {
			out = append(out, c.Sequence)
		}
		return out
	}
	// A loop writes legacy thoughts itself; without a loop only a client
	// did.
	if got := seqs(clientEvents(evs, true)); len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 5 {
		t.Errorf("loop session: %v; want [0 2 5]", got)
	}
	if got := seqs(clientEvents(evs, false)); len(got) != 4 || got[2] != 4 {
		t.Errorf("API session: %v; want [0 2 4 5]", got)
	}
}
