package server

import (
	"context"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
)

// verifyProgressEvery is how often serve --verify-full logs its progress:
// a large ledger takes minutes, and an operator should see it advance
// rather than a server that seems hung.
const verifyProgressEvery = time.Second

// verifyFull runs the full verification (serve --verify-full), logging
// its progress at most every verifyProgressEvery and once at the end.
func (s *Server) verifyFull(ctx context.Context) (ledger.StartupReport, error) {
	s.log.Info("verifying the whole ledger (--verify-full)")
	var last ledger.VerifyProgress
	next := verifyProgressEvery
	rep, err := s.ledger().VerifyFullProgress(ctx, func(p ledger.VerifyProgress) {
		last = p
		if p.Done < p.Total && p.Elapsed >= next {
			next = p.Elapsed + verifyProgressEvery
			s.logVerifyProgress("ledger verification in progress", p)
		}
	})
	if err == nil {
		s.logVerifyProgress("ledger verification done", last, "problems", len(rep.Problems))
	}
	return rep, err
}

func (s *Server) logVerifyProgress(msg string, p ledger.VerifyProgress, extra ...any) {
	rate := 0
	if sec := p.Elapsed.Seconds(); sec > 0 {
		rate = int(float64(p.Events) / sec)
	}
	args := append([]any{"sessions_done", p.Done, "sessions", p.Total, "events", p.Events,
		"events_per_sec", rate, "elapsed", p.Elapsed.Round(time.Millisecond)}, extra...)
	s.log.Info(msg, args...)
}
