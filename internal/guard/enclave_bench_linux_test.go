package guard

import (
	"context"
	"testing"

	"github.com/ironvise/ironvise/internal/enclave/remote/remotetest"
)

// BenchmarkGuardStart measures starting a guard worker and its first review
// for each enclave level, side by side: what GUARD_ENCLAVE adds to the start
// of a session's guard and to a review.
func BenchmarkGuardStart(b *testing.B) {
	srv := remotetest.NewServer(b, remotetest.Options{Infer: func(remotetest.Request) (string, string, error) { return "ALLOW", "m", nil }})
	for _, bc := range []struct {
		name  string
		setup hostSetup
	}{{"none", defaultSetup()}, {"software", softSetup()}, {"remote", remoteSetup(srv)}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				h, _ := newTestHost(b, bc.setup)
				if err := h.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
				if v := review(b, h, 1); v.Decision != "allow" {
					b.Fatalf("review: %+v", v)
				}
				_ = h.Close(context.Background())
			}
		})
	}
}

// BenchmarkGuardReview measures one review through a running worker for
// each enclave level: the remote level adds the channel's sealing and an
// HTTP round trip to a loopback stand-in (no model time on either side).
func BenchmarkGuardReview(b *testing.B) {
	srv := remotetest.NewServer(b, remotetest.Options{Infer: func(remotetest.Request) (string, string, error) { return "ALLOW", "m", nil }})
	for _, bc := range []struct {
		name  string
		setup hostSetup
	}{{"none", defaultSetup()}, {"software", softSetup()}, {"remote", remoteSetup(srv)}} {
		b.Run(bc.name, func(b *testing.B) {
			h, _ := newTestHost(b, bc.setup)
			if err := h.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			defer h.Close(context.Background())
			step := 0
			for b.Loop() {
				step++
				if v := review(b, h, step); v.Decision != "allow" {
					b.Fatalf("review: %+v", v)
				}
			}
		})
	}
}
