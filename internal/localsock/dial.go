package localsock

import (
	"context"
	"net"
	"time"
)

// Dial connects to the daemon of dataDir. Any error means no daemon
// answers there (no socket, a stale one, no permission, or a platform
// without the daemon path): the caller runs in-process.
func Dial(ctx context.Context, dataDir string) (net.Conn, error) {
	d := net.Dialer{Timeout: time.Second}
	return d.DialContext(ctx, "unix", Path(dataDir))
}

// Call sends req on conn and reads the response. An error after Dial
// succeeded means the daemon may have started the command: the caller
// must not run it again.
func Call(conn net.Conn, req *Request) (*Response, error) {
	werr := WriteMessage(conn, req)
	if werr != nil {
		// A daemon that refuses the peer answers before it reads and may
		// close first; its answer, when there is one, says why and that
		// nothing started.
		var resp Response
		if err := ReadMessage(conn, MaxResponse, &resp); err == nil && resp.NotStarted {
			return &resp, nil
		}
		return nil, werr
	}
	var resp Response
	if err := ReadMessage(conn, MaxResponse, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}
