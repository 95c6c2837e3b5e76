//go:build !linux

package mounts

// Aliases returns no other names where there is no mountinfo: the tiers of
// these systems mask nothing by mount (the container tier's engine runs in
// a virtual machine of its own there).
func Aliases(paths []string) ([]string, error) { return nil, nil }

// CheckWorkspace has no mounts to look through here.
func CheckWorkspace(ws string) error { return nil }

// WithAliases is paths: no mounts give them other names here.
func WithAliases(paths, extra []string) ([]string, error) { return paths, nil }
