package cli

import (
	"fmt"
	"github.com/ironvise/ironvise/internal/sandbox/native/launcherbin"
	"runtime"

	"github.com/spf13/cobra"
)

func (a *app) versionCommand() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version, commit, Go version and the sandbox tiers of this build",
		Example: `  ironvise version
  ironvise version --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info := struct {
				Version   string   `json:"version"`
				Commit    string   `json:"commit"`
				GoVersion string   `json:"go_version"`
				Platform  string   `json:"platform"`
				Tiers     []string `json:"tiers"`
				// Launcher is the SHA-256 of the sandbox launcher
				// embedded in this build (package launcherbin); empty
				// when the build has none and the native Linux tier
				// re-executes this binary for each command.
				Launcher string `json:"embedded_launcher_sha256"`
			}{Version: version, Commit: commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Tiers: buildTiers()}
			size, sum, embedded := launcherbin.Info()
			info.Launcher = sum
			if asJSON {
				return a.printJSON(info)
			}
			fmt.Fprintf(a.stdout, "ironvise %s (commit %s, %s, %s)\nsandbox tiers: %v\n",
				info.Version, info.Commit, info.GoVersion, info.Platform, info.Tiers)
			if embedded {
				fmt.Fprintf(a.stdout, "sandbox launcher: embedded, %d bytes, sha256 %s\n", size, sum)
			} else if runtime.GOOS == "linux" {
				fmt.Fprintln(a.stdout, "sandbox launcher: this binary (not embedded; make build embeds it)")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print machine-readable JSON")
	return cmd
}

// buildTiers lists the tiers this binary can select on this OS (the
// Firecracker tier needs Linux with KVM).
func buildTiers() []string {
	tiers := []string{"native-" + runtime.GOOS, "docker", "podman"}
	if runtime.GOOS == "linux" {
		tiers = append(tiers, "firecracker")
	}
	return tiers
}
