//go:build !linux

package kernel

import "syscall"

// The Linux-only calls fail closed elsewhere: nothing that enforces a
// sandbox may report success where it did nothing.

// CloseRangeCloexec returns ENOSYS.
func CloseRangeCloexec(uint) error { return syscall.ENOSYS }

// Setsid returns ENOSYS.
func Setsid() error { return syscall.ENOSYS }

// SetNoNewPrivs returns ENOSYS.
func SetNoNewPrivs() error { return syscall.ENOSYS }

// ClearCapabilities returns ENOSYS.
func ClearCapabilities() error { return syscall.ENOSYS }

// LandlockABI returns ENOSYS.
func LandlockABI() (int, error) { return 0, syscall.ENOSYS }

// GetRlimit returns ENOSYS.
func GetRlimit(int) (cur, max uint64, err error) { return 0, 0, syscall.ENOSYS }

// SetRlimit returns ENOSYS.
func SetRlimit(int, uint64, uint64) error { return syscall.ENOSYS }

// KernelRelease returns ENOSYS.
func KernelRelease() (string, error) { return "", syscall.ENOSYS }

// Attempt returns ENOSYS.
func Attempt(uintptr, ...uintptr) error { return syscall.ENOSYS }
