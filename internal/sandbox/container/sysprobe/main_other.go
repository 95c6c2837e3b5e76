//go:build !linux

// Command sysprobe is a Linux test fixture of the container tier; it does
// nothing elsewhere.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "sysprobe: runs only in a Linux container")
	os.Exit(1)
}
