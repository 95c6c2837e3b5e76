package config

import (
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// EnclavePCRVar is the name of the variable that pins PCR i of a remote
// guard enclave.
func EnclavePCRVar(i int) string { return fmt.Sprintf("ECTO_ENCLAVE_PCR%d", i) }

// MaxEnclavePCR is the highest PCR index a Nitro attestation carries.
const MaxEnclavePCR = 31

// loadEnclave reads GUARD_ENCLAVE and, for a remote enclave, its URL and
// pinned PCRs (docs/enclaves.md). A remote enclave without a URL or without
// PCR0 is refused: an attestation checked against nothing pinned would
// accept any enclave image, which is the attack the pinning prevents.
func loadEnclave(r *reader) (level, remoteURL string, pcrs map[int][]byte) {
	level = "none"
	if s, ok := r.get("GUARD_ENCLAVE"); ok {
		switch l := strings.ToLower(s); l {
		case "none", "software", "remote":
			level = l
		case "apple":
			r.fail("GUARD_ENCLAVE", s, "the Apple Hypervisor enclave (Level 2) needs cgo and Hypervisor.framework, which this build does not include", "none, software, remote")
		default:
			r.fail("GUARD_ENCLAVE", s, "unknown value", "none, software, remote")
		}
	}
	for i := 0; i <= MaxEnclavePCR; i++ {
		name := EnclavePCRVar(i)
		s, ok := r.get(name)
		if !ok {
			continue
		}
		b, err := hex.DecodeString(s)
		if err != nil || (len(b) != 32 && len(b) != 48 && len(b) != 64) {
			r.fail(name, s, "not a hex-encoded PCR value", "64, 96 or 128 hex digits (a Nitro PCR is 96: SHA-384)")
			continue
		}
		if pcrs == nil {
			pcrs = map[int][]byte{}
		}
		pcrs[i] = b
	}
	remoteURL, hasURL := r.get("ECTO_ENCLAVE_REMOTE_URL")
	if hasURL {
		if problem := enclaveURLProblem(remoteURL); problem != "" {
			r.fail("ECTO_ENCLAVE_REMOTE_URL", remoteURL, problem, "an https:// URL, or http:// to a loopback address")
		}
	}
	if level != "remote" {
		if hasURL || pcrs != nil {
			r.fail("GUARD_ENCLAVE", level, "ECTO_ENCLAVE_REMOTE_URL or an ECTO_ENCLAVE_PCR variable is set, but the guard's enclave is not remote", "GUARD_ENCLAVE=remote, or unset the remote enclave's variables")
		}
		return level, "", nil
	}
	if !hasURL {
		r.fail("ECTO_ENCLAVE_REMOTE_URL", "", "required while GUARD_ENCLAVE=remote", "the remote enclave's https:// URL")
	}
	if _, ok := pcrs[0]; !ok {
		r.fail(EnclavePCRVar(0), "", "required while GUARD_ENCLAVE=remote: without a pinned enclave image any enclave would be accepted", "the enclave image's PCR0 in hex (nitro-cli describe-eif)")
	}
	return level, remoteURL, pcrs
}

// enclaveURLProblem says what is wrong with a remote enclave's URL, or "".
// Plain http is accepted only to a loopback address: the attestation
// protects the prompts either way, but the enclave's address should not
// travel in the clear.
func enclaveURLProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "not an absolute URL"
	}
	switch u.Scheme {
	case "https":
		return ""
	case "http":
		host := u.Hostname()
		if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
			return ""
		}
		return "plain http to a non-loopback address"
	}
	return "scheme is not https"
}
