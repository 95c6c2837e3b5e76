package cli

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/guard"
	"github.com/ironvise/ironvise/internal/sandbox/native"
)

// The worker's protocol and process behaviour are tested in internal/guard
// against the built binary. Here: the command's registration and its key
// handling. (The command itself is not run in-process with a key: once its
// confinement is wired it would confine the test process.)

func TestGuardWorkerHidden(t *testing.T) {
	code, stdout, _ := runCLI(t, cliEnv(t), "", "--help")
	if code != 0 || strings.Contains(stdout, "guard-worker") {
		t.Fatalf("help (exit %d) lists guard-worker:\n%s", code, stdout)
	}
}

func TestGuardWorkerRefusesWithoutKey(t *testing.T) {
	t.Setenv(guard.KeyEnv, "")
	os.Unsetenv(guard.KeyEnv)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"ironvise", "guard-worker"}, strings.NewReader(""), &out, &errb, config.MapLookup(cliEnv(t)))
	if code != ExitUsage || !strings.Contains(errb.String(), "GUARD_HMAC_KEY is not set") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming GUARD_HMAC_KEY", code, out.String(), errb.String())
	}
}

func TestTakeGuardKey(t *testing.T) {
	good := strings.Repeat("ab", guard.KeyBytes)
	cases := []struct {
		name, value string
		set, ok     bool
	}{
		{"valid", good, true, true},
		{"uppercase hex", strings.ToUpper(good), true, true},
		{"short", good[:62], true, false},
		{"long", good + "00", true, false},
		{"not hex", strings.Repeat("zz", guard.KeyBytes), true, false},
		{"empty", "", true, false},
		{"unset", "", false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(guard.KeyEnv, tc.value)
			if !tc.set {
				os.Unsetenv(guard.KeyEnv)
			}
			look, err := config.OSLookup("")
			if err != nil {
				t.Fatal(err)
			}
			key, err := takeGuardKey(look)
			if (err == nil) != tc.ok || (tc.ok && len(key) != guard.KeyBytes) {
				t.Fatalf("key %x, err %v; want ok=%v", key, err, tc.ok)
			}
			if err != nil && strings.Contains(err.Error(), tc.value) && tc.value != "" {
				t.Fatalf("error %q echoes the key material", err)
			}
			// Whatever the value, it is gone from the environment.
			if v, present := os.LookupEnv(guard.KeyEnv); present {
				t.Fatalf("%s still set (%q) after takeGuardKey", guard.KeyEnv, v)
			}
		})
	}
}

func TestGuardWorkerRefusesKeyAndSecretsPipe(t *testing.T) {
	// Both ways of handing over a key at once: not a software-enclave host.
	// (The worker refuses before it hardens, so this runs in-process.)
	t.Setenv(guard.KeyEnv, strings.Repeat("ab", guard.KeyBytes))
	t.Setenv(guard.SecretsFDEnv, "3")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"ironvise", "guard-worker"}, strings.NewReader(""), &out, &errb, config.MapLookup(cliEnv(t)))
	if code != ExitUsage || !strings.Contains(errb.String(), "both GUARD_HMAC_KEY and GUARD_SECRETS_FD are set") || out.Len() != 0 {
		t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2 naming both variables", code, out.String(), errb.String())
	}
	if _, ok := os.LookupEnv(guard.KeyEnv); ok {
		t.Fatal("the refused key is still in the environment")
	}
}

func TestGuardWorkerProfileName(t *testing.T) {
	// The host checks the measured profile name against guard.WorkerProfile;
	// the worker confines itself with native.HTTPSClient().
	if got := native.HTTPSClient().Name(); got != guard.WorkerProfile {
		t.Fatalf("native.HTTPSClient().Name() = %q; guard.WorkerProfile = %q", got, guard.WorkerProfile)
	}
}
