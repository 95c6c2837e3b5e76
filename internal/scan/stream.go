package scan

import (
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TruncationMarker returns the line appended to a cut stream
// (docs/design/checks.md#scanner-pipeline step 2, test 57): "\n[truncated: N
// bytes omitted]".
func TruncationMarker(omitted int64) string {
	return "\n[truncated: " + strconv.FormatInt(omitted, 10) + " bytes omitted]"
}

// Collector is an io.Writer that keeps the first MaxCollectBytes written to
// it and counts the rest (docs/design/checks.md#scanner-pipeline step 1).
// Write never fails, so a chatty child process is never blocked or killed by
// a full buffer. The zero value is ready to use; it is safe for concurrent
// writers.
type Collector struct {
	mu    sync.Mutex
	buf   []byte // guarded by mu
	total int64  // guarded by mu
}

// NewCollector returns an empty Collector; the zero value works as well.
func NewCollector() *Collector { return &Collector{} }

// Write implements io.Writer. It always reports len(p) bytes written.
func (c *Collector) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.total += int64(len(p))
	if room := MaxCollectBytes - len(c.buf); room > 0 {
		c.buf = append(c.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

// Bytes returns a copy of the kept bytes.
func (c *Collector) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.buf...)
}

// Total returns the number of bytes written, kept or not.
func (c *Collector) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// Text returns the stream capped and normalised by CapStream.
func (c *Collector) Text() (text string, truncated bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CapStream(c.buf, c.total)
}

// CapStream implements docs/design/checks.md#scanner-pipeline steps 2–4 for
// one stream: data is what the collector kept and total the number of bytes
// the stream produced. The text is cut at MaxStreamBytes without splitting a
// UTF-8 sequence, invalid bytes become U+FFFD, NFKC is applied and, if that
// grew the text past MaxNormalizedBytes, it is cut again at a normalisation
// boundary. A cut stream ends with TruncationMarker(N), N counting the
// stream bytes that are not represented in text.
func CapStream(data []byte, total int64) (text string, truncated bool) {
	total = max(total, int64(len(data)))
	keep := len(data)
	if keep > MaxStreamBytes {
		keep = runeCut(data, MaxStreamBytes)
	}
	decoded := validUTF8(data[:keep])
	text = toNFKC(decoded)
	if len(text) > MaxNormalizedBytes {
		var consumed int
		text, consumed = nfkcPrefix(decoded, MaxNormalizedBytes)
		keep = rawOffset(data[:keep], consumed)
	}
	if omitted := total - int64(keep); omitted > 0 {
		return text + TruncationMarker(omitted), true
	}
	return text, false
}

// normalize makes t valid UTF-8 in NFKC and at most limit bytes (plus the
// marker). It is what Scan applies to text that did not come through
// CapStream; for text that did, it is the identity.
func normalize(t string, limit int) (string, bool) {
	if isASCII(t) {
		if len(t) <= limit {
			return t, false
		}
		return t[:limit] + TruncationMarker(int64(len(t)-limit)), true
	}
	if !utf8.ValidString(t) {
		t = validUTF8([]byte(t))
	}
	t = toNFKC(t)
	if len(t) <= limit {
		return t, false
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(t[cut]) {
		cut--
	}
	return t[:cut] + TruncationMarker(int64(len(t)-cut)), true
}

// CutText returns s cut to at most limit bytes without splitting a UTF-8
// sequence, with "…[truncated]" appended when it was cut: what a recorded
// field keeps of a longer value that a hash commits to whole.
func CutText(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	return s[:runeCut([]byte(s), limit)] + "…[truncated]"
}

// runeCut returns the largest cut ≤ limit that does not split a valid UTF-8
// sequence of data. Invalid bytes are cut anywhere: they become U+FFFD.
func runeCut(data []byte, limit int) int {
	for back := 1; back < utf8.UTFMax && back <= limit; back++ {
		start := limit - back
		if !utf8.RuneStart(data[start]) {
			continue
		}
		// A valid rune starting at start that ends past limit is kept
		// whole out of the stream or not at all.
		if r, size := utf8.DecodeRune(data[start:]); r != utf8.RuneError || size > 1 {
			if start+size > limit {
				return start
			}
		}
		break
	}
	return limit
}

// validUTF8 decodes b, turning each invalid byte into U+FFFD.
func validUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + len(b)/2)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size <= 1 {
			sb.WriteRune(utf8.RuneError)
			b = b[1:]
			continue
		}
		sb.Write(b[:size])
		b = b[size:]
	}
	return sb.String()
}

// rawOffset maps an offset in validUTF8(raw) back to raw: each invalid
// byte became the three bytes of U+FFFD.
func rawOffset(raw []byte, decoded int) int {
	d, i := 0, 0
	for i < len(raw) && d < decoded {
		r, size := utf8.DecodeRune(raw[i:])
		if r == utf8.RuneError && size <= 1 {
			d += utf8.RuneLen(utf8.RuneError)
			i++
			continue
		}
		d += size
		i += size
	}
	return i
}

// toNFKC applies NFKC; ASCII text is already in NFKC.
func toNFKC(s string) string {
	if isASCII(s) {
		return s
	}
	return norm.NFKC.String(s)
}

// nfkcPrefix normalises the longest prefix of s whose NFKC form fits in
// limit bytes, cutting only at normalisation boundaries. It returns the
// normalised text and how many bytes of s it consumed.
func nfkcPrefix(s string, limit int) (string, int) {
	var it norm.Iter
	it.InitString(norm.NFKC, s)
	var sb strings.Builder
	for !it.Done() {
		pos := it.Pos()
		seg := it.Next()
		if sb.Len()+len(seg) > limit {
			return sb.String(), pos
		}
		sb.Write(seg)
	}
	return sb.String(), len(s)
}

// isASCII reports whether s has only bytes below 0x80, 32 at a time.
func isASCII(s string) bool {
	const hi = 0x8080808080808080
	i := 0
	for ; i+32 <= len(s); i += 32 {
		c := s[i : i+32]
		if (le64(c)|le64(c[8:])|le64(c[16:])|le64(c[24:]))&hi != 0 {
			return false
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if le64(s[i:])&hi != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// le64 reads the first eight bytes of s as a little-endian word.
func le64(s string) uint64 {
	_ = s[7] // one bounds check for the eight loads
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}
