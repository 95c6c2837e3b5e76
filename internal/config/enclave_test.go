package config

import (
	"strings"
	"testing"
)

func TestEnclave(t *testing.T) {
	pcr := strings.Repeat("ab", 48)
	ok := []struct {
		name  string
		env   map[string]string
		level string
		url   string
		pcrs  int
	}{
		{"default", nil, "none", "", 0},
		{"software", map[string]string{"GUARD_ENCLAVE": "Software"}, "software", "", 0},
		{"remote https", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "https://enclave.example:8443", "ECTO_ENCLAVE_PCR0": pcr, "ECTO_ENCLAVE_PCR8": strings.Repeat("01", 48)}, "remote", "https://enclave.example:8443", 2},
		{"remote loopback http", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "http://127.0.0.1:9000", "ECTO_ENCLAVE_PCR0": pcr}, "remote", "http://127.0.0.1:9000", 1},
	}
	for _, tc := range ok {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(MapLookup(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			g := c.Guard
			if g.Enclave != tc.level || g.EnclaveRemoteURL != tc.url || len(g.EnclavePCRs) != tc.pcrs {
				t.Fatalf("got %q %q %d PCRs; want %q %q %d", g.Enclave, g.EnclaveRemoteURL, len(g.EnclavePCRs), tc.level, tc.url, tc.pcrs)
			}
		})
	}
	bad := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"apple is honest", map[string]string{"GUARD_ENCLAVE": "apple"}, "needs cgo and Hypervisor.framework"},
		{"unknown level", map[string]string{"GUARD_ENCLAVE": "sgx"}, "unknown value"},
		{"remote without URL", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_PCR0": pcr}, "ECTO_ENCLAVE_REMOTE_URL"},
		{"remote without PCR0", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "https://e.example", "ECTO_ENCLAVE_PCR1": pcr}, "ECTO_ENCLAVE_PCR0"},
		{"plain http off loopback", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "http://10.0.0.5", "ECTO_ENCLAVE_PCR0": pcr}, "plain http"},
		{"PCR not hex", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "https://e.example", "ECTO_ENCLAVE_PCR0": "zz"}, "not a hex-encoded PCR"},
		{"PCR wrong length", map[string]string{"GUARD_ENCLAVE": "remote", "ECTO_ENCLAVE_REMOTE_URL": "https://e.example", "ECTO_ENCLAVE_PCR0": "abcd"}, "not a hex-encoded PCR"},
		{"remote variables without remote", map[string]string{"GUARD_ENCLAVE": "software", "ECTO_ENCLAVE_PCR0": pcr}, "not remote"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(MapLookup(tc.env))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestGuardValidateRemoteEnclave(t *testing.T) {
	g := Guard{Required: true, Enclave: "remote"}
	if eff, err := g.Validate("openai"); err != nil || eff.Backend != "" {
		t.Fatalf("remote enclave without a guard backend: got %+v, %v; want it accepted with no backend", eff, err)
	}
	g.Backend = "openai"
	if _, err := g.Validate("openai"); err == nil || !strings.Contains(err.Error(), "GUARD_ENCLAVE=remote") {
		t.Fatalf("remote enclave with a guard backend: got %v; want a refusal naming GUARD_ENCLAVE=remote", err)
	}
}
