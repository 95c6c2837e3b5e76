package native

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
)

// Profile is what a process may still do after [ConfineSelf]. Start from a
// preset ([HTTPSClient]); the modifiers return copies.
type Profile struct {
	name       string
	readFiles  []string // granted if present
	readDirs   []string // granted if present, with everything below them
	extra      []string // granted; must exist
	bestEffort bool
}

// HTTPSClient is the guard worker's profile
// (docs/design/agent.md#guard-worker): a Go program that talks HTTPS to a
// model API. It may read what Go's resolver, TLS stack and time zone code
// read lazily — /etc/resolv.conf, /etc/hosts, /etc/nsswitch.conf,
// /etc/services, /etc/protocols, /etc/localtime, the system's CA bundles and
// certificate directories (never /etc/ssl as a whole: /etc/ssl/private holds
// the host's TLS keys) and the zoneinfo database — and nothing else. Anything
// else the process needs from the file system (its configuration, a mock
// script) must be read before ConfineSelf.
func HTTPSClient() Profile {
	return Profile{
		name: "https-client",
		readFiles: []string{
			"/etc/resolv.conf", "/etc/hosts", "/etc/nsswitch.conf", "/etc/services", "/etc/protocols",
			"/etc/localtime",
			// crypto/x509's CA bundles (one is read).
			"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
			"/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem",
		},
		readDirs: []string{
			// crypto/x509's certificate directories (all are read) and
			// where their entries link to.
			"/etc/ssl/certs", "/etc/pki/tls/certs", "/etc/pki/ca-trust/extracted",
			"/usr/share/ca-certificates", "/usr/local/share/ca-certificates",
			"/usr/share/zoneinfo",
		},
	}
}

// WithReadPaths returns a copy of p that may also read paths (files, or
// directories with everything below them). Each must be absolute and must
// exist when ConfineSelf runs.
func (p Profile) WithReadPaths(paths ...string) Profile {
	p.extra = append(slices.Clone(p.extra), paths...)
	return p
}

// BestEffort returns a copy of p with which ConfineSelf succeeds without
// confining on an OS where IronVise has no self-confinement (every OS but
// Linux: Seatbelt's sandbox_init needs cgo, and Windows offers no
// comparable per-process filter); the returned [Confinement] then says
// so. On Linux it changes nothing: a kernel without Landlock or seccomp is
// still an error.
func (p Profile) BestEffort() Profile {
	p.bestEffort = true
	return p
}

// Name returns the profile's name, as recorded in [Confinement].
func (p Profile) Name() string { return p.name }

// validate reports a profile that cannot be applied as it stands.
func (p Profile) validate() error {
	if p.name == "" {
		return errors.New("native: confine: empty profile: start from a preset such as native.HTTPSClient()")
	}
	for _, x := range p.extra {
		if !filepath.IsAbs(x) {
			return fmt.Errorf("native: confine: read path %q is not absolute", x)
		}
	}
	return nil
}

// Confinement is what ConfineSelf put in force.
type Confinement struct {
	// Profile is the profile's name.
	Profile string
	// LandlockABI is the Landlock ABI of the ruleset (0 when unconfined).
	LandlockABI int
	// SeccompSHA256 is the hash of the installed seccomp program.
	SeccompSHA256 string
	// NoNewPrivs is the no_new_privs bit after confinement.
	NoNewPrivs bool
	// ReadPaths are the paths the process may still read (those of the
	// profile that exist).
	ReadPaths []string
	// Unconfined, when not nil, says why a best-effort profile left the
	// process unconfined; it wraps errors.ErrUnsupported.
	Unconfined error
}

// Confined reports whether the process is confined.
func (c Confinement) Confined() bool { return c.Unconfined == nil && c.LandlockABI > 0 }
