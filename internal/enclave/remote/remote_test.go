package remote_test

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/nitro"
	"github.com/ironvise/ironvise/internal/enclave/nitro/nitrotest"
	"github.com/ironvise/ironvise/internal/enclave/remote"
	"github.com/ironvise/ironvise/internal/enclave/remote/remotetest"
	"github.com/ironvise/ironvise/internal/llm"
)

func attest(t *testing.T, s *remotetest.Server) (*remote.Channel, *enclave.Remote) {
	t.Helper()
	ch, rec, err := remote.Attest(t.Context(), s.Config())
	if err != nil {
		t.Fatalf("Attest: %v", err)
	}
	return ch, rec
}

func guardRequest(i int) llm.Request {
	return llm.Request{
		Kind:        llm.KindGuard,
		System:      "you are the guard",
		Messages:    []llm.Message{{Role: llm.RoleUser, Content: fmt.Sprintf("intent %d", i)}, {Role: llm.RoleAssistant, Content: "noted"}},
		JSON:        i%2 == 0,
		Temperature: 0.25,
		MaxTokens:   100 + i,
	}
}

func TestAttestAndInfer(t *testing.T) {
	t.Parallel()
	s := remotetest.NewServer(t, remotetest.Options{
		Infer: func(r remotetest.Request) (string, string, error) {
			return "ALLOW " + r.Messages[0].Content, "guard-7b", nil
		},
	})
	before := time.Now()
	ch, rec := attest(t, s)

	if rec.URL != s.URL {
		t.Errorf("URL = %q; want %q", rec.URL, s.URL)
	}
	if len(rec.Document) == 0 || len(rec.Nonce) != remote.NonceSize || len(rec.ClientPublicKey) != remote.KeySize || len(rec.EnclavePublicKey) != remote.KeySize {
		t.Errorf("record sizes: document %d, nonce %d, client key %d, enclave key %d",
			len(rec.Document), len(rec.Nonce), len(rec.ClientPublicKey), len(rec.EnclavePublicKey))
	}
	if bytes.Equal(rec.ClientPublicKey, rec.EnclavePublicKey) {
		t.Error("client and enclave keys are equal")
	}
	for i, v := range s.PCRs {
		if got, want := rec.PinnedPCRs[i], hex.EncodeToString(v); got != want {
			t.Errorf("PinnedPCRs[%d] = %q; want %q", i, got, want)
		}
	}
	if len(rec.PinnedPCRs) != len(s.PCRs) {
		t.Errorf("PinnedPCRs has %d entries; want %d", len(rec.PinnedPCRs), len(s.PCRs))
	}
	if rec.ModuleID != remotetest.ModuleID {
		t.Errorf("ModuleID = %q; want %q", rec.ModuleID, remotetest.ModuleID)
	}
	if rec.Timestamp.Before(before.Add(-time.Second)) || rec.Timestamp.After(time.Now()) || rec.Timestamp.Location() != time.UTC {
		t.Errorf("Timestamp = %s; want a UTC time during the call", rec.Timestamp)
	}

	c := remote.NewClient(ch, s.Config().HTTPClient)
	if c.Backend() != "enclave-remote" || c.Model() != "remote-enclave" {
		t.Errorf("Backend, Model = %q, %q; want enclave-remote, remote-enclave", c.Backend(), c.Model())
	}
	for i := range 3 {
		resp, err := c.Complete(t.Context(), guardRequest(i))
		if err != nil {
			t.Fatalf("Complete %d: %v", i, err)
		}
		if want := fmt.Sprintf("ALLOW intent %d", i); resp.Text != want || resp.Model != "guard-7b" {
			t.Errorf("Complete %d = %q from %q; want %q from guard-7b", i, resp.Text, resp.Model, want)
		}
		if resp.Latency <= 0 {
			t.Errorf("Complete %d: latency %s", i, resp.Latency)
		}
	}
	if c.Model() != "guard-7b" {
		t.Errorf("Model = %q after answers; want guard-7b", c.Model())
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("the enclave opened %d requests; want 3", len(reqs))
	}
	for i, r := range reqs {
		want := guardRequest(i)
		if r.System != want.System || r.Temperature != want.Temperature || r.MaxTokens != want.MaxTokens || r.JSON != want.JSON ||
			len(r.Messages) != 2 || r.Messages[0].Role != "user" || r.Messages[0].Content != want.Messages[0].Content || r.Messages[1].Role != "assistant" {
			t.Errorf("request %d as the enclave saw it: %+v; want %+v", i, r, want)
		}
	}
	if s.Sessions() != 1 {
		t.Errorf("server has %d sessions; want 1", s.Sessions())
	}
}

func TestAttestTLS(t *testing.T) {
	t.Parallel()
	s := remotetest.NewServer(t, remotetest.Options{TLS: true})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL %q is not https", s.URL)
	}
	ch, _ := attest(t, s)
	resp, err := remote.NewClient(ch, s.Config().HTTPClient).Complete(t.Context(), guardRequest(0))
	if err != nil || resp.Text != "ALLOW" {
		t.Fatalf("Complete = %q, %v; want ALLOW", resp.Text, err)
	}
}

func TestAttestRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults remotetest.Faults
		// cfg edits the honest configuration.
		cfg  func(*remote.Config)
		want error
	}{
		{"replayed document", remotetest.Faults{ReplayDocument: true}, nil, nitro.ErrNonce},
		{"wrong nonce", remotetest.Faults{WrongNonce: true}, nil, nitro.ErrNonce},
		{"wrong PCR0", remotetest.Faults{WrongPCR0: true}, nil, nitro.ErrPCR},
		{"pinned PCR1 differs", remotetest.Faults{}, func(c *remote.Config) { c.PCRs[1] = remotetest.PCR("other kernel") }, nitro.ErrPCR},
		{"user_data binds another client key", remotetest.Faults{ForeignBinding: true}, nil, nitro.ErrBinding},
		{"bad signature", remotetest.Faults{BadSignature: true}, nil, nitro.ErrSignature},
		{"foreign chain", remotetest.Faults{ForeignChain: true}, nil, nitro.ErrChain},
		{"expired certificate", remotetest.Faults{ExpiredCertificate: true}, nil, nitro.ErrChain},
		// Without Roots the pinned AWS root is used, which the test
		// authority does not chain to.
		{"production root", remotetest.Faults{}, func(c *remote.Config) { c.Roots = nil }, nitro.ErrChain},
		{"old document", remotetest.Faults{Age: 10 * time.Minute}, nil, remote.ErrStale},
		// The chain must be valid now, not only when the document was
		// signed: the leaf (valid three hours) has expired since.
		{"leaf expired since signing", remotetest.Faults{Age: 3*time.Hour + 30*time.Minute}, func(c *remote.Config) { c.MaxAge = 4 * time.Hour }, nitro.ErrChain},
		{"older than MaxAge", remotetest.Faults{Age: 2 * time.Minute}, func(c *remote.Config) { c.MaxAge = time.Minute }, remote.ErrStale},
		// The leaf is valid from a minute before the document's time, so
		// the chain still verifies at the client's slow clock.
		{"document from the future", remotetest.Faults{}, func(c *remote.Config) {
			c.Now = func() time.Time { return time.Now().Add(-30 * time.Second) }
			c.MaxAge = 10 * time.Second
		}, remote.ErrStale},
		{"plain http elsewhere", remotetest.Faults{}, func(c *remote.Config) { c.URL = "http://192.0.2.1:1" }, remote.ErrConfig},
		{"no PCR0 pinned", remotetest.Faults{}, func(c *remote.Config) { delete(c.PCRs, 0) }, remote.ErrConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := remotetest.NewServer(t, remotetest.Options{})
			if tc.faults.ReplayDocument {
				attest(t, s) // the document to replay
			}
			s.SetFaults(tc.faults)
			cfg := s.Config()
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			ch, rec, err := remote.Attest(t.Context(), cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Attest error = %v; want %v", err, tc.want)
			}
			if ch != nil || rec != nil {
				t.Errorf("Attest returned a channel or record with its error")
			}
		})
	}
	// The same server, honest again, attests: each refusal above is the
	// fault's doing.
	s := remotetest.NewServer(t, remotetest.Options{Faults: remotetest.Faults{Age: 2 * time.Minute}})
	attest(t, s)
}

// TestAttestSwappedKey: a document whose public_key is not the key the
// server holds verifies (it is genuine), but the prompts are sealed to that
// key, so the server cannot read them and the channel dies.
func TestAttestSwappedKey(t *testing.T) {
	t.Parallel()
	s := remotetest.NewServer(t, remotetest.Options{Faults: remotetest.Faults{SwappedKey: true}})
	ch, _ := attest(t, s)
	c := remote.NewClient(ch, nil)
	if _, err := c.Complete(t.Context(), guardRequest(0)); !errors.Is(err, remote.ErrProtocol) {
		t.Fatalf("Complete = %v; want ErrProtocol (the enclave could not open the request)", err)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("the server read %d requests sealed to a key it does not hold", n)
	}
	if _, err := c.Complete(t.Context(), guardRequest(1)); !errors.Is(err, remote.ErrChannel) {
		t.Fatalf("Complete after the failure = %v; want ErrChannel", err)
	}
}

func TestCompleteRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults remotetest.Faults
		infer  func(remotetest.Request) (string, string, error)
		// good is how many calls succeed before the failing one.
		good int
		want error
		// alive says whether the channel survives the failure.
		alive bool
	}{
		{"tampered reply", remotetest.Faults{TamperReply: true}, nil, 0, remote.ErrChannel, false},
		{"reused reply counter", remotetest.Faults{ReuseReplyCounter: true}, nil, 1, remote.ErrChannel, false},
		{"oversized reply", remotetest.Faults{}, func(remotetest.Request) (string, string, error) {
			return strings.Repeat("A", remote.MaxBody), "m", nil
		}, 0, remote.ErrProtocol, false},
		{"model failure", remotetest.Faults{}, func(remotetest.Request) (string, string, error) {
			return "", "", errors.New("out of memory")
		}, 0, remote.ErrModel, true},
		{"empty reply", remotetest.Faults{}, func(remotetest.Request) (string, string, error) {
			return "", "m", nil
		}, 0, llm.ErrBadResponse, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var fail atomic.Bool
			s := remotetest.NewServer(t, remotetest.Options{Infer: func(r remotetest.Request) (string, string, error) {
				if fail.Load() && tc.infer != nil {
					return tc.infer(r)
				}
				return "ALLOW", "m", nil
			}})
			ch, _ := attest(t, s)
			c := remote.NewClient(ch, nil)
			for i := range tc.good {
				if _, err := c.Complete(t.Context(), guardRequest(i)); err != nil {
					t.Fatalf("Complete %d: %v", i, err)
				}
			}
			s.SetFaults(tc.faults)
			fail.Store(true) // the client waits for each reply: no race with the handler
			if resp, err := c.Complete(t.Context(), guardRequest(tc.good)); !errors.Is(err, tc.want) {
				t.Fatalf("Complete = %q, %v; want %v", resp.Text, err, tc.want)
			}
			s.SetFaults(remotetest.Faults{})
			fail.Store(false)
			_, err := c.Complete(t.Context(), guardRequest(tc.good+1))
			if tc.alive && err != nil {
				t.Errorf("Complete after the failure: %v; want the channel alive", err)
			}
			if !tc.alive && !errors.Is(err, remote.ErrChannel) {
				t.Errorf("Complete after the failure: %v; want ErrChannel (dead)", err)
			}
		})
	}
}

func TestCompleteContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	s := remotetest.NewServer(t, remotetest.Options{Infer: func(r remotetest.Request) (string, string, error) {
		if r.System == "slow" {
			<-release
		}
		return "ALLOW", "m", nil
	}})
	defer close(release)
	ch, _ := attest(t, s)
	c := remote.NewClient(ch, nil)

	// Cancelled before it starts: nothing is sent and the channel lives.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Complete(ctx, guardRequest(0)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Complete with a cancelled context = %v; want context.Canceled", err)
	}
	if _, err := c.Complete(t.Context(), guardRequest(1)); err != nil {
		t.Fatalf("Complete after a cancelled call: %v", err)
	}

	// A deadline during the call ends it; the channel is then dead.
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Complete(ctx, llm.Request{System: "slow"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Complete past its deadline = %v; want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Complete returned %s after its deadline", d)
	}
	if _, err := c.Complete(t.Context(), guardRequest(2)); !errors.Is(err, remote.ErrChannel) {
		t.Fatalf("Complete after a timed-out call = %v; want ErrChannel", err)
	}
}

func TestExportImportContinues(t *testing.T) {
	t.Parallel()
	s := remotetest.NewServer(t, remotetest.Options{})
	ch, _ := attest(t, s)
	host := remote.NewClient(ch, nil)
	if _, err := host.Complete(t.Context(), guardRequest(0)); err != nil {
		t.Fatal(err)
	}
	blob, err := ch.Export()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := host.Complete(t.Context(), guardRequest(1)); !errors.Is(err, remote.ErrChannel) {
		t.Fatalf("the exporter's Complete = %v; want ErrChannel", err)
	}
	imported, err := remote.ImportChannel(blob)
	if err != nil {
		t.Fatal(err)
	}
	worker := remote.NewClient(imported, nil)
	for i := 1; i <= 2; i++ {
		if _, err := worker.Complete(t.Context(), guardRequest(i)); err != nil {
			t.Fatalf("imported Complete %d: %v", i, err)
		}
	}
	if n, sessions := len(s.Requests()), s.Sessions(); n != 3 || sessions != 1 {
		t.Fatalf("server saw %d requests in %d sessions; want 3 in 1", n, sessions)
	}
}

func TestVerifyRecord(t *testing.T) {
	t.Parallel()
	s := remotetest.NewServer(t, remotetest.Options{})
	_, rec := attest(t, s)
	_, other := attest(t, s)
	roots := s.Authority.Roots
	// Each attestation has its own nonce and client key: a document
	// answered to one cannot serve another.
	if bytes.Equal(rec.Nonce, other.Nonce) || bytes.Equal(rec.ClientPublicKey, other.ClientPublicKey) || bytes.Equal(rec.EnclavePublicKey, other.EnclavePublicKey) {
		t.Errorf("two attestations share a nonce or a key")
	}

	// The record as a session's genesis stores it.
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	var stored enclave.Remote
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if err := remote.VerifyRecord(&stored, roots); err != nil {
		t.Fatalf("VerifyRecord of the stored record: %v", err)
	}

	flip := func(b []byte) []byte { c := bytes.Clone(b); c[len(c)/2] ^= 1; return c }
	for _, tc := range []struct {
		name  string
		edit  func(r *enclave.Remote)
		roots bool
		want  error // nil: any error
	}{
		{"document byte", func(r *enclave.Remote) { r.Document = flip(r.Document) }, true, nil},
		{"another session's document", func(r *enclave.Remote) { r.Document = other.Document }, true, nitro.ErrNonce},
		{"nonce", func(r *enclave.Remote) { r.Nonce = flip(r.Nonce) }, true, nitro.ErrNonce},
		{"client public key", func(r *enclave.Remote) { r.ClientPublicKey = flip(r.ClientPublicKey) }, true, nitro.ErrBinding},
		{"enclave public key", func(r *enclave.Remote) { r.EnclavePublicKey = flip(r.EnclavePublicKey) }, true, remote.ErrRecord},
		{"pinned PCR0", func(r *enclave.Remote) { r.PinnedPCRs[0] = hex.EncodeToString(remotetest.PCR("x")) }, true, nitro.ErrPCR},
		{"pinned PCR5 added", func(r *enclave.Remote) { r.PinnedPCRs[5] = hex.EncodeToString(remotetest.PCR("x")) }, true, nitro.ErrPCR},
		{"pinned PCR0 removed", func(r *enclave.Remote) { delete(r.PinnedPCRs, 0) }, true, remote.ErrRecord},
		{"pinned PCR not hex", func(r *enclave.Remote) { r.PinnedPCRs[1] = "zz" }, true, remote.ErrRecord},
		{"module id", func(r *enclave.Remote) { r.ModuleID += "x" }, true, remote.ErrRecord},
		{"timestamp", func(r *enclave.Remote) { r.Timestamp = r.Timestamp.Add(time.Millisecond) }, true, remote.ErrRecord},
		{"no nonce", func(r *enclave.Remote) { r.Nonce = nil }, true, remote.ErrRecord},
		{"pinned AWS root", func(r *enclave.Remote) {}, false, nitro.ErrChain},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := stored
			r.PinnedPCRs = map[int]string{}
			for i, v := range stored.PinnedPCRs {
				r.PinnedPCRs[i] = v
			}
			tc.edit(&r)
			pool := roots
			if !tc.roots {
				pool = nil
			}
			err := remote.VerifyRecord(&r, pool)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("VerifyRecord = %v; want %v", err, tc.want)
			}
		})
	}
	if err := remote.VerifyRecord(nil, roots); !errors.Is(err, remote.ErrRecord) {
		t.Errorf("VerifyRecord(nil) = %v; want ErrRecord", err)
	}
}

// TestVerifyRecordLater: a record verifies at its document's own time, long
// after the leaf certificate (valid three hours) has expired.
func TestVerifyRecordLater(t *testing.T) {
	t.Parallel()
	a, err := nitrotest.NewAuthority()
	if err != nil {
		t.Fatal(err)
	}
	epriv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	nonce, cpub := make([]byte, 32), make([]byte, 32)
	rand.Read(nonce)
	rand.Read(cpub)
	ts := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	pcr0 := remotetest.PCR("image")
	doc, err := a.Sign(nitrotest.Fields{ModuleID: "m", Timestamp: ts, PCRs: map[int][]byte{0: pcr0},
		PublicKey: epriv.PublicKey().Bytes(), UserData: remote.ClientKeyBinding(cpub), Nonce: nonce})
	if err != nil {
		t.Fatal(err)
	}
	rec := &enclave.Remote{URL: "https://e.example", Document: doc, Nonce: nonce, ClientPublicKey: cpub,
		EnclavePublicKey: epriv.PublicKey().Bytes(), PinnedPCRs: map[int]string{0: hex.EncodeToString(pcr0)}, ModuleID: "m", Timestamp: ts}
	if err := remote.VerifyRecord(rec, a.Roots); err != nil {
		t.Fatalf("VerifyRecord of a 2024 record: %v", err)
	}
	// The same document is refused as a live attestation: it is stale and
	// its leaf has expired.
	if _, err := nitro.Verify(doc, nitro.Options{Roots: a.Roots, Nonce: nonce, Time: time.Now()}); !errors.Is(err, nitro.ErrChain) {
		t.Fatalf("live verification of a 2024 document = %v; want ErrChain", err)
	}
}
