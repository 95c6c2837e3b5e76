package egress

import (
	"errors"
	"fmt"
	"io"
)

// TLS record and handshake limits: the record layer and the handshake
// message framing of TLS 1.3 (RFC 8446), which a TLS 1.2 ClientHello shares.
const (
	recordHeaderLen    = 5
	maxRecordLen       = 1 << 14
	recordHandshake    = 22
	handshakeClientHi  = 1
	extServerName      = 0
	sniHostName        = 0
	maxClientHelloSize = 1 << 16 // a ClientHello this large is refused
)

var errNotTLS = errors.New("not a TLS handshake record")

// readClientHello reads TLS records from r until it holds one whole
// handshake message, which must be a ClientHello. It returns the raw
// records read (to forward unchanged) and the handshake message.
func readClientHello(r io.Reader) (raw, msg []byte, err error) {
	var hdr [recordHeaderLen]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, nil, fmt.Errorf("%w: the connection ended before a whole ClientHello", errNotTLS)
			}
			return nil, nil, fmt.Errorf("reading a TLS record: %w", err)
		}
		if hdr[0] != recordHandshake || hdr[1] != 3 {
			return nil, nil, fmt.Errorf("%w (first bytes %x)", errNotTLS, hdr[:3])
		}
		n := int(hdr[3])<<8 | int(hdr[4])
		if n == 0 || n > maxRecordLen {
			return nil, nil, fmt.Errorf("%w: record length %d", errNotTLS, n)
		}
		frag := make([]byte, n)
		if _, err := io.ReadFull(r, frag); err != nil {
			return nil, nil, fmt.Errorf("reading a TLS record: %w", err)
		}
		raw = append(append(raw, hdr[:]...), frag...)
		msg = append(msg, frag...)
		if len(msg) >= 4 {
			if msg[0] != handshakeClientHi {
				return nil, nil, fmt.Errorf("%w: handshake type %d is not ClientHello", errNotTLS, msg[0])
			}
			want := 4 + (int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3]))
			if want > maxClientHelloSize {
				return nil, nil, fmt.Errorf("ClientHello of %d bytes is over the %d-byte limit", want, maxClientHelloSize)
			}
			if len(msg) >= want {
				return raw, msg[:want], nil
			}
		}
	}
}

// reader consumes a byte slice with bounds checks: every read past the
// end sets ok to false and returns zeros, so a parser checks once.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) bytes(n int) []byte {
	if !r.ok || n < 0 || n > len(r.b) {
		r.ok = false
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() int {
	b := r.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (r *reader) u16() int {
	b := r.bytes(2)
	if b == nil {
		return 0
	}
	return int(b[0])<<8 | int(b[1])
}

// vec returns the next vector with a length prefix of size 1, 2 or 3.
func (r *reader) vec(size int) *reader {
	n := 0
	for range size {
		n = n<<8 | r.u8()
	}
	return &reader{b: r.bytes(n), ok: r.ok}
}

// parseSNI returns the host_name of the server_name extension of a
// ClientHello handshake message (RFC 8446 §4.1.2, RFC 6066 §3), or ""
// when there is none. A malformed message, a repeated extension or a
// server name with bytes outside printable ASCII is an error.
func parseSNI(msg []byte) (string, error) {
	r := &reader{b: msg, ok: true}
	if r.u8() != handshakeClientHi {
		return "", errors.New("not a ClientHello")
	}
	body := r.vec(3)
	body.bytes(2 + 32) // legacy_version, random
	body.vec(1)        // legacy_session_id
	body.vec(2)        // cipher_suites
	body.vec(1)        // legacy_compression_methods
	if !body.ok || !r.ok {
		return "", errors.New("truncated ClientHello")
	}
	if len(body.b) == 0 {
		return "", nil // no extensions
	}
	exts := body.vec(2)
	if !body.ok || len(body.b) != 0 {
		return "", errors.New("malformed ClientHello extensions")
	}
	seen := map[int]bool{}
	name := ""
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.vec(2)
		if !exts.ok {
			return "", errors.New("truncated ClientHello extension")
		}
		if seen[typ] {
			return "", fmt.Errorf("ClientHello repeats extension %d", typ)
		}
		seen[typ] = true
		if typ != extServerName {
			continue
		}
		list := data.vec(2)
		if !data.ok || len(data.b) != 0 || len(list.b) == 0 {
			return "", errors.New("malformed server_name extension")
		}
		for len(list.b) > 0 {
			kind := list.u8()
			n := list.vec(2)
			if !list.ok {
				return "", errors.New("truncated server_name extension")
			}
			if kind != sniHostName {
				continue
			}
			if name != "" {
				return "", errors.New("server_name extension carries two host names")
			}
			if len(n.b) == 0 {
				return "", errors.New("empty server name")
			}
			for _, c := range n.b {
				if c <= ' ' || c >= 0x7f {
					return "", fmt.Errorf("server name has byte %#x outside printable ASCII", c)
				}
			}
			name = string(n.b)
		}
	}
	return name, nil
}
