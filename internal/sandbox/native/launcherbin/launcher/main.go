// Command launcher is the native Linux tier's sandbox launcher as a program
// of its own, which the build embeds in the ironvise binary (package
// launcherbin). The launcher runs from package launch/early's initialiser,
// as in the ironvise binary; main runs only when it was not asked for.
package main

import (
	"os"

	"github.com/ironvise/ironvise/internal/sandbox/native/launch"
	_ "github.com/ironvise/ironvise/internal/sandbox/native/launch/early"
)

func main() {
	if len(os.Args) == 2 && os.Args[1] == launch.CheckArg {
		os.Stdout.WriteString(launch.CheckReply + "\n")
		return
	}
	os.Stderr.WriteString("this is IronVise's sandbox launcher, which ironvise starts for each sandboxed command; run ironvise instead\n")
	os.Exit(2)
}
