//go:build !linux

package seccomp

import "testing"

// fromBytes: no launcher and no FromBytes off Linux.
func fromBytes(*testing.T) {}
