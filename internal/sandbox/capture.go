package sandbox

import "github.com/ironvise/ironvise/internal/scan"

// Output limits of docs/design/checks.md#scanner-pipeline, owned by
// internal/scan.
const (
	// CollectLimit is how much of each stream is kept while the command
	// runs; the rest is read, counted and discarded so the command never
	// blocks on a full pipe.
	CollectLimit = scan.MaxCollectBytes
	// StreamCap is the size each stream is cut to before it becomes part
	// of the observation.
	StreamCap = scan.MaxStreamBytes
)

// Collector is an io.Writer that keeps the first CollectLimit bytes written
// to it and counts the total (docs/design/checks.md#scanner-pipeline step 1).
// It is safe for concurrent use; its Write never fails, so the copying
// goroutine keeps draining the command's pipe.
type Collector struct {
	scan.Collector
}

// Capped returns the stream as the observation carries it — cut to
// StreamCap bytes without splitting a UTF-8 sequence, invalid bytes as
// U+FFFD, NFKC, with the truncation marker — and whether it was cut
// (docs/design/checks.md#scanner-pipeline steps 2–4).
func (c *Collector) Capped() (string, bool) { return c.Text() }

// CapStream applies docs/design/checks.md#scanner-pipeline steps 2–4 to the
// collected bytes b of a stream whose full length was total: a cut stream
// ends with "\n[truncated: N bytes omitted]". It is internal/scan's helper,
// so the sandbox record and the scanner see the same text.
func CapStream(b []byte, total int64) (string, bool) { return scan.CapStream(b, total) }
