package agent

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/evidence"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/sandbox"
)

// recordingNotifier keeps what the loop hands to SIEM egress. It stands in
// for webhook.Dispatcher, which has its own end-to-end tests; here the
// question is which events the loop reports.
type recordingNotifier struct {
	mu  sync.Mutex
	evs []ledger.Event
}

func (r *recordingNotifier) Notify(ev ledger.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evs = append(r.evs, ev)
}

func (r *recordingNotifier) types() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := map[string]int{}
	for _, e := range r.evs {
		m[e.Type]++
	}
	return m
}

// abortingTier is a tier that cannot be applied: every run is aborted, as
// a real tier reports when its kernel feature is missing.
type abortingTier struct{}

func (abortingTier) Name() sandbox.TierName { return sandbox.TierNativeLinux }
func (abortingTier) Available(context.Context) error {
	return errors.New("landlock unavailable")
}
func (abortingTier) Run(_ context.Context, _ sandbox.Request) sandbox.Result {
	return sandbox.Aborted(sandbox.TierNativeLinux, "landlock is not available: enable CONFIG_SECURITY_LANDLOCK", time.Millisecond)
}
func (abortingTier) SelfTest(context.Context) error { return errors.New("landlock unavailable") }

func TestCredentialIssuedBeforeSeal(t *testing.T) {
	h := newHarness(t)
	h.env.Credentials = evidence.Credentials{Ledger: h.env.Ledger}
	s := h.session(t, "audit", nil, nil)
	out, err := s.Run(context.Background(), RunOptions{LLM: script(t, rfNotes, complete)})
	if err != nil || out.Status != ledger.StatusCompleted {
		t.Fatalf("run: %v %+v", err, out)
	}
	evs := h.events(t, s.ID.String())
	n := len(evs)
	if evs[n-1].Type != ledger.TypeSessionSealed || evs[n-2].Type != ledger.TypeVerifiableCredential || evs[n-3].Type != ledger.TypeAction {
		t.Fatalf("events end %s %s %s", evs[n-3].Type, evs[n-2].Type, evs[n-1].Type)
	}
	var p struct {
		JWT string `json:"vc_jwt"`
	}
	json.Unmarshal(evs[n-2].Payload, &p)
	c, err := evidence.VerifyVC(p.JWT, h.env.Ledger.IssuerPublicKey())
	if err != nil || c.VC.Subject.TipHash != evs[n-3].Hash.String() || c.Subject != s.ID.String() {
		t.Fatalf("credential: %v %+v", err, c)
	}
	if rep, err := h.env.Ledger.VerifySession(context.Background(), s.ID); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %+v", err, rep)
	}
	// A session that does not complete gets no credential.
	s2 := h.session(t, "audit", nil, nil)
	if out, _ := s2.Run(context.Background(), RunOptions{LLM: script(t, rcSudo, rcSudo, rcSudo, rcSudo, rcSudo)}); out.Status != ledger.StatusAborted {
		t.Fatalf("status %s", out.Status)
	}
	for _, e := range h.events(t, s2.ID.String()) {
		if e.Type == ledger.TypeVerifiableCredential {
			t.Fatal("an aborted session got a credential")
		}
	}
}

func TestNotifierSeesDenialsAbortsAndAbortedSeal(t *testing.T) {
	h := newHarness(t)
	rec := &recordingNotifier{}
	h.env.Notifier = rec
	h.env.Tier = abortingTier{}
	s := h.session(t, "audit", nil, nil)
	// One command aborted by the sandbox, then five tripwire denials end
	// the session aborted.
	out, err := s.Run(context.Background(), RunOptions{LLM: script(t, rcEcho, rfNotes, rcSudo, rcSudo, rcSudo, rcSudo, rcSudo)})
	if err != nil || out.Status != ledger.StatusAborted {
		t.Fatalf("run: %v %+v", err, out)
	}
	got := rec.types()
	if got[ledger.TypeCheckVerdict] != 5 || got[ledger.TypeSandboxResult] != 1 || got[ledger.TypeSessionSealed] != 1 || got[ledger.TypeObservation] != 2 {
		t.Fatalf("notified %v; want 5 denials, 1 sandbox abort, 2 observations, 1 aborted seal", got)
	}
	for _, e := range rec.evs {
		if e.SessionID != s.ID || e.Hash == (ledger.Hash{}) {
			t.Fatalf("notified event lacks identity: %+v", e)
		}
	}
	// A completed session's seal is not a notification.
	rec2 := &recordingNotifier{}
	h.env.Notifier, h.env.Tier = rec2, sandbox.NewPermissive(sandbox.Options{})
	s2 := h.session(t, "audit", nil, nil)
	if _, err := s2.Run(context.Background(), RunOptions{LLM: script(t, rfNotes, complete)}); err != nil {
		t.Fatal(err)
	}
	if got := rec2.types(); got[ledger.TypeSessionSealed] != 0 || got[ledger.TypeCheckVerdict] != 0 {
		t.Fatalf("completed session notified %v", got)
	}
}
