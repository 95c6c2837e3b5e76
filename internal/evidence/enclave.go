package evidence

import (
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/enclave/record"
	"github.com/ironvise/ironvise/internal/ledger"
)

// PillarEnclave names the sixth pillar: the attestation of the enclave the
// session's guard ran in (docs/enclaves.md). It is reported only for a
// session whose genesis records one.
const PillarEnclave = "enclave_attestation"

// genesisEnclave returns the enclave attestation the certificate's genesis
// records: nil without one, an error when the member is there but not an
// attestation. The genesis payload is signed (pillar 3), so what is read
// here is what the session recorded.
func genesisEnclave(c *Certificate) (*enclave.Attestation, error) {
	if len(c.Events) == 0 || c.Events[0].Type != ledger.TypeGenesis || c.Events[0].Seq != 0 {
		return nil, nil
	}
	var g struct {
		Enclave json.RawMessage `json:"enclave"`
	}
	if err := json.Unmarshal([]byte(c.Events[0].Payload), &g); err != nil {
		return nil, fmt.Errorf("the genesis payload is not a JSON object: %w", err)
	}
	if len(g.Enclave) == 0 || string(g.Enclave) == "null" {
		return nil, nil
	}
	var a enclave.Attestation
	if err := strictDecode(g.Enclave, &a); err != nil {
		return nil, fmt.Errorf("the genesis records an enclave that is not an attestation: %w", err)
	}
	return &a, nil
}

// checkEnclave verifies the sixth pillar. roots replaces the pinned AWS
// Nitro root only in tests (VerifyOptions.enclaveRoots); nil is the pinned
// root.
func checkEnclave(a *enclave.Attestation, roots *x509.CertPool) Pillar {
	switch a.Level {
	case enclave.LevelRemote:
		if a.Remote == nil {
			return failP(PillarEnclave, 0, "a remote enclave's record holds no remote attestation")
		}
		// The worker that holds the channel is hardened as in Level 1;
		// its measurement, when recorded, must be complete too.
		if a.Measurement != nil {
			if problem := measurementProblem(a.Measurement); problem != "" {
				return failP(PillarEnclave, 0, "the remote enclave's guard worker measurement %s", problem)
			}
		}
		// The whole verification again, offline: signature, chain to
		// the pinned root at the document's own time, the nonce and key
		// the session recorded, the pinned PCRs. A record edited after the
		// fact fails here even if its genesis signature were forged.
		if err := record.Verify(a.Remote, roots); err != nil {
			return failP(PillarEnclave, 0, "the remote enclave's attestation does not verify: %v", err)
		}
		return passP(PillarEnclave, fmt.Sprintf("AWS Nitro attestation of enclave %s at %s verified offline: signature, certificate chain to the pinned root, nonce, key binding and %d pinned PCR(s)",
			a.Remote.ModuleID, a.Remote.Timestamp.UTC().Format("2006-01-02T15:04:05Z"), len(a.Remote.PinnedPCRs)))
	case enclave.LevelSoftware:
		m := a.Measurement
		if m == nil || a.Remote != nil {
			return failP(PillarEnclave, 0, "a software enclave's record must hold the worker's measurement and nothing else")
		}
		if problem := measurementProblem(m); problem != "" {
			return failP(PillarEnclave, 0, "the software enclave's measurement %s", problem)
		}
		// Nothing outside the host vouches for a software measurement:
		// the pillar checks that what was recorded is a complete,
		// hardened measurement, and says what it cannot prove.
		return passP(PillarEnclave, fmt.Sprintf("software-hardened guard worker %s (memory locked, not dumpable, Landlock ABI %d, seccomp %s), checked by the host from outside: %v; a software measurement is reported by the host, not by hardware, so it cannot be verified independently",
			m.WorkerSHA256[:16], m.LandlockABI, m.SeccompSHA256[:min(16, len(m.SeccompSHA256))], m.HostChecked))
	}
	return failP(PillarEnclave, 0, "enclave level %q is not one IronVise records", a.Level)
}

// measurementProblem says what a recorded Level 1 measurement lacks, or "".
func measurementProblem(m *enclave.Measurement) string {
	if b, err := hex.DecodeString(m.WorkerSHA256); err != nil || len(b) != 32 {
		return "has no worker SHA-256"
	}
	switch {
	case !m.MemoryLocked:
		return "says the worker's memory was not locked"
	case m.Dumpable:
		return "says the worker was dumpable"
	case m.CoreLimit != 0:
		return fmt.Sprintf("says the worker's core limit was %d", m.CoreLimit)
	case m.LandlockABI <= 0 || !m.NoNewPrivs || m.SeccompSHA256 == "":
		return "says the worker was not confined"
	case len(m.HostChecked) == 0:
		return "records no check by the host"
	}
	return ""
}
