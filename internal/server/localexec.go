package server

import (
	"context"
	"errors"

	"github.com/ironvise/ironvise/internal/localsock"
	"github.com/ironvise/ironvise/internal/session"
)

// LocalExec runs one `ironvise exec` request on the server's runtime (the
// open ledger, the built scanner, the selected tier); the CLI provides it
// so that the daemon path runs exactly the code of an in-process exec.
type LocalExec func(ctx context.Context, rt *session.Runtime, req *localsock.Request) *localsock.Response

// startLocal listens on the data directory's socket when Options.Local is
// set (docs/operate/performance.md#daemon-path). A socket that cannot be
// opened only costs speed: exec then runs in-process, so it is a warning.
func (s *Server) startLocal() {
	if s.opts.Local == nil {
		return
	}
	ln, err := localsock.Listen(s.cfg.DataDir)
	if errors.Is(err, errors.ErrUnsupported) {
		return
	}
	if err != nil {
		s.log.Warn("the exec daemon socket is not available; ironvise exec runs in-process", "err", err)
		return
	}
	s.local = ln
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ln.Serve(s.bg, func(ctx context.Context, req *localsock.Request) *localsock.Response {
			return s.opts.Local(ctx, s.sessionRuntime(), req)
		})
	}()
}

// stopLocal stops accepting exec requests and removes the socket; the
// requests in flight end with the background context (Shutdown waits).
func (s *Server) stopLocal() {
	if s.local != nil {
		_ = s.local.Close()
	}
}
