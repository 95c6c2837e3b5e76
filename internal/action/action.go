// Package action executes the two actions IronVise performs itself after
// the checks allowed them: read_file and http_get (run_command goes to the
// sandbox).
//
// # Why the checks run again here
//
// Between the check and the execution the world can change: a symlink can
// be swapped into the path, a DNS answer can change. So read_file repeats
// the path checks just before opening and opens beneath the root without
// following any symlink, and http_get dials only the addresses the check
// resolved, re-verifies the peer address on connect, and re-runs the URL
// checks on every redirect hop (docs/design/checks.md#tripwire-paths step 6,
// docs/design/checks.md#tripwire-urls step 8). read_file refuses the
// protected paths (IronVise's data directory, the credential stores; reason
// path_protected) by name at the re-check, and by identity once the file is
// open, so a hard link to one is refused too.
//
// # Usage
//
//	out, v := action.ReadFile(tw, "config/app.yaml")
//	res, hops, err := (&action.HTTP{Tripwire: tw}).Get(ctx, "https://example.com/", view.URL.Addrs)
//
// # Limitations
//
// Output is collected up to 1 MiB per stream and counted beyond; capping to
// the 64 KiB observation size is the caller's job (package scan).
package action

import (
	"io"
)

// MaxCollect is the most bytes kept of one stream
// (docs/design/checks.md#scanner-pipeline step 1).
const MaxCollect = 1 << 20

// Output is a collected stream: at most MaxCollect bytes and the total.
type Output struct {
	Data  []byte
	Total int64
}

// collect reads r to the end, keeping MaxCollect bytes and counting the
// rest, so a huge file or body cannot exhaust memory.
func collect(r io.Reader) (Output, error) {
	buf, err := io.ReadAll(io.LimitReader(r, MaxCollect))
	out := Output{Data: buf, Total: int64(len(buf))}
	if err != nil {
		return out, err
	}
	n, err := io.Copy(io.Discard, r)
	out.Total += n
	return out, err
}
