package cli

import (
	"fmt"

	"github.com/ironvise/ironvise/internal/check"
	"github.com/ironvise/ironvise/internal/config"
)

// loadPolicy loads --policy (a file or a pack name) with an optional hash
// pin. With no --policy, no policy is loaded and the policy check records
// "no policy loaded".
func (a *app) loadPolicy(_ *config.Config, ref, pin string) (check.Policy, *string, error) {
	if ref == "" && pin == "" {
		return nil, nil, nil
	}
	return nil, nil, exitCode(ExitUsage, fmt.Errorf("--policy: the policy engine is not wired into this build yet"))
}
