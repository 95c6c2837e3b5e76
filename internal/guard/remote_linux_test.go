package guard

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/nitro"
	"github.com/ironvise/ironvise/internal/enclave/record"
	"github.com/ironvise/ironvise/internal/enclave/remote/remotetest"
	"github.com/ironvise/ironvise/internal/verdict"
)

// remoteSetup is a host whose guard runs in srv, the stand-in Nitro
// enclave: no backend, the URL and PCR0 pinned, the test root in place of
// the AWS root.
func remoteSetup(srv *remotetest.Server) hostSetup {
	s := defaultSetup()
	s.guard.Backend, s.guard.Model, s.guard.MockReplySet = "", "", false
	s.guard.Enclave, s.guard.EnclaveRemoteURL, s.guard.EnclavePCRs = "remote", srv.URL, map[int][]byte{0: srv.PCRs[0]}
	s.enclave = enclave.LevelRemote
	s.remoteRoots = srv.Authority.Roots
	return s
}

func TestRemoteEnclaveHost(t *testing.T) {
	var calls atomic.Int64
	srv := remotetest.NewServer(t, remotetest.Options{Infer: func(req remotetest.Request) (string, string, error) {
		if calls.Add(1) == 2 {
			return "DENY: the enclave's model refuses", "enclave-guard-1", nil
		}
		return "ALLOW", "enclave-guard-1", nil
	}})
	h, _ := startHost(t, remoteSetup(srv))
	a := h.Attestation()
	if a == nil || a.Level != enclave.LevelRemote || a.Remote == nil || a.Measurement == nil || !a.Measurement.MemoryLocked {
		t.Fatalf("Attestation() = %+v; want the remote attestation and the hardened worker's measurement", a)
	}
	if err := record.Verify(a.Remote, srv.Authority.Roots); err != nil {
		t.Fatalf("the recorded attestation does not verify: %v", err)
	}
	wantVerdict(t, review(t, h, 1), verdict.Allow, verdict.GuardAllow, "ALLOW")
	wantVerdict(t, review(t, h, 2), verdict.Deny, verdict.GuardDeny, "the enclave's model refuses")
	wantVerdict(t, review(t, h, 3), verdict.Allow, verdict.GuardAllow, "ALLOW")
	reqs := srv.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[0].Messages[0].Content, "BEGIN ACTION") {
		t.Fatalf("the enclave got %d requests (%+v); want the three reviews with their intents", len(reqs), reqs)
	}

	// A lost worker's replacement gets a channel of its own, from a fresh
	// attestation; the session's record stays the first.
	killWorker(t, h)
	wantVerdict(t, review(t, h, 4), verdict.Deny, verdict.GuardUnavailable, "")
	wantVerdict(t, review(t, h, 5), verdict.Allow, verdict.GuardAllow, "ALLOW")
	if n := srv.Sessions(); n != 2 {
		t.Fatalf("the enclave saw %d attestations; want 2 (one per worker)", n)
	}
	if string(h.Attestation().Remote.Nonce) != string(a.Remote.Nonce) {
		t.Fatal("the recorded attestation changed with the replacement worker")
	}

	// A replacement whose enclave fails attestation is not used, and no
	// plain model call takes its place.
	h2, _ := startHost(t, remoteSetup(srv))
	srv.SetFaults(remotetest.Faults{WrongPCR0: true})
	killWorker(t, h2)
	before := calls.Load()
	wantVerdict(t, review(t, h2, 1), verdict.Deny, verdict.GuardUnavailable, "")
	wantVerdict(t, review(t, h2, 2), verdict.Deny, verdict.GuardUnavailable, "PCR")
	if err := h2.Err(); !errors.Is(err, ErrEnclave) || !errors.Is(err, nitro.ErrPCR) {
		t.Fatalf("Err() = %v; want ErrEnclave wrapping nitro.ErrPCR", err)
	}
	if calls.Load() != before {
		t.Fatal("a review reached a model after the enclave failed attestation")
	}
}

func TestRemoteEnclaveStartRefused(t *testing.T) {
	for name, f := range map[string]struct {
		faults remotetest.Faults
		want   error
	}{
		"replayed document": {remotetest.Faults{ReplayDocument: true}, nitro.ErrNonce},
		"wrong PCR0":        {remotetest.Faults{WrongPCR0: true}, nitro.ErrPCR},
		"bad signature":     {remotetest.Faults{BadSignature: true}, nitro.ErrSignature},
		"foreign chain":     {remotetest.Faults{ForeignChain: true}, nitro.ErrChain},
		"expired":           {remotetest.Faults{ExpiredCertificate: true}, nitro.ErrChain},
		"foreign binding":   {remotetest.Faults{ForeignBinding: true}, nitro.ErrBinding},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := remotetest.NewServer(t, remotetest.Options{})
			if f.faults.ReplayDocument {
				// A first attestation for the server to replay.
				h, _ := startHost(t, remoteSetup(srv))
				_ = h.Close(context.Background())
			}
			srv.SetFaults(f.faults)
			h, _ := newTestHost(t, remoteSetup(srv))
			err := h.Start(context.Background())
			if !errors.Is(err, ErrEnclave) || !errors.Is(err, f.want) {
				t.Fatalf("Start = %v; want ErrEnclave wrapping %v", err, f.want)
			}
			wantVerdict(t, review(t, h, 1), verdict.Deny, verdict.GuardUnavailable, "")
		})
	}
}

// TestRemoteEnclaveSilent: an enclave that accepts the connection and never
// answers fails the start within the guard's timeout instead of holding the
// session's start forever.
func TestRemoteEnclaveSilent(t *testing.T) {
	srv := remotetest.NewServer(t, remotetest.Options{})
	release := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(release)
	s := remoteSetup(srv)
	s.guard.EnclaveRemoteURL, s.guard.TimeoutSecs = silent.URL, 1
	h, _ := newTestHost(t, s)
	start := time.Now()
	err := h.Start(context.Background())
	if !errors.Is(err, ErrEnclave) || time.Since(start) > 10*time.Second {
		t.Fatalf("Start = %v after %s; want ErrEnclave within the 1 s timeout", err, time.Since(start))
	}
}
