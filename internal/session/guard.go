package session

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"time"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/enclave"
	"github.com/ironvise/ironvise/internal/guard"
)

// Guard is the guard of one session: a running guard worker, or the
// reason none runs (recorded in every step's guard verdict). The zero
// value is not valid: use StartGuard or GuardSkipped.
type Guard struct {
	// Host is the running worker; nil when the guard is off.
	Host *guard.Host
	// Skip says why the guard is off ("" when Host is set).
	Skip string
	// attestation is the enclave's proof, taken when the guard started.
	attestation *enclave.Attestation
}

// GuardSkipped is a guard that does not run, for the reason given.
func GuardSkipped(reason string) *Guard { return &Guard{Skip: reason} }

// GuardOptions say how a guard worker starts.
type GuardOptions struct {
	// Lookup reads the environment the worker inherits (its model's keys).
	Lookup config.Lookup
	// LLM is the primary model's configuration: the guard shares its base
	// URLs and keys.
	LLM config.LLM
	// Logger receives the worker's messages; nil keeps the host's default.
	Logger *slog.Logger
	// Executable is the binary started as the worker ("" means this one).
	Executable string
	// EnclaveRoots replaces the pinned AWS Nitro root certificate when a
	// remote guard enclave is attested. Tests only: no command or variable
	// sets it.
	EnclaveRoots *x509.CertPool
}

// StartError reports a guard worker that could not be started; Err is the
// cause. Front ends report it as a configuration or availability error.
type StartError struct{ Err error }

// Error implements error.
func (e *StartError) Error() string { return "start the guard: " + e.Err.Error() }

// Unwrap returns the cause.
func (e *StartError) Unwrap() error { return e.Err }

// StartGuard starts the guard worker plan enables, or returns a skipped
// guard naming plan's reason. The caller must Close the result.
//
// With a guard enclave (GUARD_ENCLAVE=software or remote) the worker starts
// now, within ctx, and must prove its enclave before StartGuard returns: a
// failure is a StartError and no session starts (fail closed). The proof
// is then recorded in the session's genesis (Guard.Attestation).
func StartGuard(ctx context.Context, plan guard.Plan, o GuardOptions) (*Guard, error) {
	if !plan.Enabled {
		return GuardSkipped(plan.SkipMessage), nil
	}
	look := o.Lookup
	if look == nil {
		look = config.MapLookup(nil)
	}
	opts, err := guard.ConfigHostOptions(look, plan.Guard, o.LLM)
	if err != nil {
		return nil, &StartError{err}
	}
	if o.Logger != nil {
		opts.Logger = o.Logger
	}
	if o.Executable != "" {
		opts.Executable = o.Executable
	}
	if opts.Remote != nil {
		opts.Remote.Roots = o.EnclaveRoots
	}
	h, err := guard.NewHost(opts)
	if err != nil {
		return nil, &StartError{err}
	}
	g := &Guard{Host: h}
	if opts.Enclave != enclave.LevelNone {
		if err := h.Start(ctx); err != nil {
			g.Close()
			return nil, &StartError{err}
		}
		g.attestation = h.Attestation()
		if g.attestation == nil {
			g.Close()
			return nil, &StartError{fmt.Errorf("guard: the %s enclave started without an attestation", opts.Enclave)}
		}
	}
	return g, nil
}

// Attestation returns the attestation of the guard's enclave, for the
// session's genesis; nil without an enclave.
func (g *Guard) Attestation() *enclave.Attestation {
	if g == nil {
		return nil
	}
	return g.attestation
}

// Enabled reports whether a guard worker runs.
func (g *Guard) Enabled() bool { return g != nil && g.Host != nil }

// Check returns the guard as the check pipeline's guard (nil when off: a
// nil *guard.Host in the interface would look enabled).
func (g *Guard) Check() check.Guard {
	if !g.Enabled() {
		return nil
	}
	return g.Host
}

// Status returns what the loop asks after each step whether the worker was
// lost for good (nil when off).
func (g *Guard) Status() agent.GuardStatus {
	if !g.Enabled() {
		return nil
	}
	return g.Host
}

// guardCloseTimeout bounds stopping a guard worker.
const guardCloseTimeout = 5 * time.Second

// Close stops the guard worker, if any; it is safe to call more than once.
func (g *Guard) Close() {
	if !g.Enabled() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), guardCloseTimeout)
	defer cancel()
	_ = g.Host.Close(ctx)
	g.Host = nil
}
