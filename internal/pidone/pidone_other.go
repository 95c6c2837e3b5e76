//go:build !linux

package pidone

import "io"

// Run does nothing outside Linux: only Linux containers run IronVise as
// their first process.
func Run(io.Writer) (code int, ran bool) { return 0, false }
