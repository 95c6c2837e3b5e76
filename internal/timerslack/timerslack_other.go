//go:build !linux

package timerslack

// Reexec does nothing: the timer slack is Linux's.
func Reexec() error { return nil }

// Start calls start.
func Start(start func() error) error { return start() }
