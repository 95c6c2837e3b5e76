//go:build !linux

// Command ironvise-guest is the init of IronVise's Firecracker guests. It
// runs only inside a Linux microVM; on other systems it refuses to run.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "ironvise-guest: runs only as the init of a Linux microVM")
	os.Exit(1)
}
