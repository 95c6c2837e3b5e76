//go:build !linux

package seccomp

// Profile is an assembled filter and its hash. On this platform there is
// none (unsupported.go).
type Profile struct {
	SHA256 string
}
