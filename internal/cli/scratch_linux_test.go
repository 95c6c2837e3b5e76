//go:build linux

package cli

import (
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/session"
)

func TestSandboxOptionsCarryScratchCap(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int
	}{{"", config.DefaultSandboxScratchMiB}, {"64", 64}} {
		t.Run("ECTO_SANDBOX_SCRATCH_MIB="+tc.value, func(t *testing.T) {
			cfg, err := config.Load(config.MapLookup(map[string]string{"HOME": "/h", "ECTO_SANDBOX_SCRATCH_MIB": tc.value}))
			if err != nil {
				t.Fatal(err)
			}
			if got := session.TierOptions(cfg.Sandbox, "", nil).ScratchMiB; got != tc.want {
				t.Fatalf("ScratchMiB = %d; want %d", got, tc.want)
			}
		})
	}
}

// TestExecScratchCapFromEnvironment: ECTO_SANDBOX_SCRATCH_MIB reaches the
// native tier's scratch tmpfs: a command cannot write more than the cap,
// and the sandbox_result records the cap in force.
func TestExecScratchCapFromEnvironment(t *testing.T) {
	ws := t.TempDir()
	env := cliEnv(t, "ECTO_SANDBOX_SCRATCH_MIB", "8")
	code, _, errOut := runCLI(t, env, "", "exec", "--workspace", ws, "--", `head -c 16777216 /dev/zero > "$TMPDIR/fill"`)
	if code == 0 || !strings.Contains(errOut, "No space left on device") {
		t.Fatalf("writing 16 MiB into an 8 MiB scratch: exit %d, stderr %s; want ENOSPC", code, errOut)
	}
	sr := payloadOf(t, events(t, env, sessionOf(t, errOut)), ledger.TypeSandboxResult)
	enf, _ := sr["enforced"].(map[string]any)
	sc, _ := enf["scratch"].(map[string]any)
	if sc["mib"] != float64(8) {
		t.Fatalf("sandbox_result enforced.scratch %v; want mib 8", sc)
	}
}
