package execclient

import (
	"errors"
	"io"
	"os"
	"strconv"

	"github.com/ironvise/ironvise/internal/localsock/wire"
)

// Conn is one connection to the daemon: one request, one response.
type Conn struct {
	f    *os.File
	path string
}

// Close hangs up. A request in flight is stopped by the daemon.
func (c *Conn) Close() error { return c.f.Close() }

// errTooLarge reads as the daemon's own refusal of an oversized message.
var errTooLarge = errors.New("localsock: message too large")

// send writes req. An error means the daemon may have read part of it
// (receive tells whether it refused it).
func (c *Conn) send(req *wire.Request) error {
	msg := wire.AppendRequest(make([]byte, 4, 512), req)
	n := len(msg) - 4
	if n > wire.MaxResponse {
		return errTooLarge
	}
	msg[0], msg[1], msg[2], msg[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	_, err := c.f.Write(msg)
	return err
}

// receive reads the response to the request send wrote, werr being
// send's error. An error means the daemon may have started the command:
// the caller must not run it again.
func (c *Conn) receive(werr error) (*wire.Response, error) {
	if werr != nil {
		// A daemon that refuses the peer answers before it reads and may
		// close first; its answer, when there is one, says why and that
		// nothing started.
		if resp, err := c.read(); err == nil && resp.NotStarted {
			return resp, nil
		}
		return nil, werr
	}
	return c.read()
}

// read reads one response frame: a 4-byte big-endian length, then the
// JSON.
func (c *Conn) read() (*wire.Response, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(c.f, hdr[:]); err != nil {
		return nil, err
	}
	n := uint32(hdr[0])<<24 | uint32(hdr[1])<<16 | uint32(hdr[2])<<8 | uint32(hdr[3])
	if n > wire.MaxResponse {
		return nil, errors.New(errTooLarge.Error() + ": " + strconv.FormatUint(uint64(n), 10) + " bytes (limit " + strconv.Itoa(wire.MaxResponse) + ")")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(c.f, b); err != nil {
		return nil, err
	}
	return wire.ParseResponse(b)
}
