package evidence

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/remote"
	"github.com/ironvise/ironvise/internal/enclave/remote/remotetest"
	"github.com/ironvise/ironvise/internal/ledger"
)

// enclaveCertificate builds a sealed session whose genesis records att and
// returns its certificate.
func enclaveCertificate(t *testing.T, att *enclave.Attestation) []byte {
	t.Helper()
	ctx := context.Background()
	l := newTestLedger(t)
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "review with an enclave guard", GuardRequired: true, SandboxTier: "native", Enclave: att})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.EndSession(ctx, s.ID, ledger.StatusCompleted); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Seal(ctx, s.ID, "agent"); err != nil {
		t.Fatal(err)
	}
	data, _, err := buildCertificate(ctx, l, s.ID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// softwareMeasurement is a complete Level 1 measurement.
func softwareMeasurement() *enclave.Measurement {
	return &enclave.Measurement{
		WorkerSHA256: strings.Repeat("ab", 32), Profile: "https-client", LandlockABI: 7, SeccompSHA256: strings.Repeat("cd", 32),
		NoNewPrivs: true, MemoryLocked: true, CoreLimit: 0, SecretsOverPipe: true,
		HostChecked: []string{"executable hash", "/proc/<pid>/status VmLck"},
	}
}

func TestEnclavePillar(t *testing.T) {
	srv := remotetest.NewServer(t, remotetest.Options{})
	cfg := srv.Config()
	ch, rec, err := remote.Attest(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ch.Close()
	roots := cfg.Roots

	// altered returns a copy of rec with one change: what a forger would
	// record for a session whose guard ran elsewhere.
	altered := func(edit func(r *enclave.Remote)) *enclave.Attestation {
		r := *rec
		r.PinnedPCRs = map[int]string{}
		for k, v := range rec.PinnedPCRs {
			r.PinnedPCRs[k] = v
		}
		edit(&r)
		return &enclave.Attestation{Level: enclave.LevelRemote, Remote: &r}
	}
	soft := func(edit func(m *enclave.Measurement)) *enclave.Attestation {
		m := softwareMeasurement()
		edit(m)
		return &enclave.Attestation{Level: enclave.LevelSoftware, Measurement: m}
	}
	cases := []struct {
		name  string
		att   *enclave.Attestation
		roots bool // use the test root (else the pinned AWS root)
		ok    bool
		want  string
	}{
		{"remote verifies offline", &enclave.Attestation{Level: enclave.LevelRemote, Remote: rec}, true, true, "verified offline"},
		{"remote against the pinned AWS root", &enclave.Attestation{Level: enclave.LevelRemote, Remote: rec}, false, false, "does not verify"},
		{"remote with another nonce recorded", altered(func(r *enclave.Remote) { r.Nonce = make([]byte, len(r.Nonce)) }), true, false, "does not verify"},
		{"remote with another PCR0 pinned", altered(func(r *enclave.Remote) { r.PinnedPCRs[0] = strings.Repeat("00", 47) + "01" }), true, false, "does not verify"},
		{"remote with another client key", altered(func(r *enclave.Remote) { r.ClientPublicKey = append([]byte(nil), r.EnclavePublicKey...) }), true, false, "does not verify"},
		{"remote document edited", altered(func(r *enclave.Remote) {
			d := append([]byte(nil), r.Document...)
			d[len(d)-3] ^= 1
			r.Document = d
		}), true, false, "does not verify"},
		{"remote with the hardened worker's measurement", &enclave.Attestation{Level: enclave.LevelRemote, Remote: rec, Measurement: softwareMeasurement()}, true, true, "verified offline"},
		{"remote with a dumpable worker", &enclave.Attestation{Level: enclave.LevelRemote, Remote: rec, Measurement: func() *enclave.Measurement {
			m := softwareMeasurement()
			m.Dumpable = true
			return m
		}()}, true, false, "dumpable"},
		{"remote without its attestation", &enclave.Attestation{Level: enclave.LevelRemote}, true, false, "no remote attestation"},
		{"software complete", soft(func(*enclave.Measurement) {}), true, true, "cannot be verified independently"},
		{"software memory not locked", soft(func(m *enclave.Measurement) { m.MemoryLocked = false }), true, false, "not locked"},
		{"software dumpable", soft(func(m *enclave.Measurement) { m.Dumpable = true }), true, false, "dumpable"},
		{"software unconfined", soft(func(m *enclave.Measurement) { m.LandlockABI = 0 }), true, false, "not confined"},
		{"software without host checks", soft(func(m *enclave.Measurement) { m.HostChecked = nil }), true, false, "no check by the host"},
		{"unknown level", &enclave.Attestation{Level: "sgx"}, true, false, "not one IronVise records"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := enclaveCertificate(t, tc.att)
			opts := VerifyOptions{}
			if tc.roots {
				opts.EnclaveRoots = roots
			}
			res, err := VerifyCertificateWith(data, testIssuerPub(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Pillars) != 6 {
				t.Fatalf("got %d pillars; want 6 for a session with an enclave", len(res.Pillars))
			}
			p := res.Pillar(PillarEnclave)
			text := p.Note + p.Problem
			if p.OK != tc.ok || res.Valid != tc.ok || !strings.Contains(text, tc.want) {
				t.Fatalf("pillar %+v, valid %v; want ok=%v containing %q", p, res.Valid, tc.ok, tc.want)
			}
			// The five other pillars pass either way: the forged record is
			// signed like any genesis, and only the sixth pillar sees
			// through it.
			for _, q := range res.Pillars[:5] {
				if !q.OK {
					t.Fatalf("pillar %s failed: %s", q.Name, q.Problem)
				}
			}
		})
	}
}

func TestNoEnclaveFivePillars(t *testing.T) {
	_, _, data := fixtureCertificate(t)
	res, err := VerifyCertificate(data, testIssuerPub(t))
	if err != nil || !res.Valid || len(res.Pillars) != 5 {
		t.Fatalf("got valid=%v, %d pillars, %v; want a valid certificate with five pillars", res.Valid, len(res.Pillars), err)
	}
}
