package cli

import (
	"errors"
	"fmt"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/policy"
)

// loadPolicy loads --policy (a file, a shipped pack or a policy of the data
// dir) with an optional --policy-sha256 pin. For a request to the exec
// daemon, a bare name is not looked up in the daemon's working directory
// (policy.Options.NoWorkingDir). With no --policy, no policy is
// loaded and the policy check records "no policy loaded". Load errors are
// configuration errors (exit 2) listing every problem with its line.
func (a *app) loadPolicy(cfg *config.Config, ref, pin string) (*policy.Policy, *string, error) {
	if ref == "" {
		if pin != "" {
			return nil, nil, exitCode(ExitUsage, errors.New("--policy-sha256 needs --policy"))
		}
		return nil, nil, nil
	}
	p, err := policy.Load(ref, policy.Options{DataDir: cfg.DataDir, SHA256: pin, NoWorkingDir: a.daemonRequest || a.hookRequest})
	if err != nil {
		if !errors.Is(err, policy.ErrNotFound) && !errors.Is(err, policy.ErrAmbiguous) {
			// The file was found and does not load: the error quotes its
			// text, which is no hint to rewrite. (A lookup error names
			// only the reference, and its hints are to be rewritten.)
			err = &verbatimError{err}
		}
		return nil, nil, exitCode(ExitUsage, fmt.Errorf("policy not loaded:\n%w", err))
	}
	h := p.SHA256()
	return p, &h, nil
}
