package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/session"
)

// sandboxState is the startup self-test of the selected tier and, once it
// has run in the background, the doctor's guarantees
// (docs/design/api.md#sandbox-report).
type sandboxState struct {
	s *Server

	passed    bool
	selfErr   error
	checkedAt time.Time

	doctorOnce sync.Once
	doctorDone chan struct{}
	report     sandbox.TierReport // set before doctorDone closes
}

func newSandboxState(s *Server) *sandboxState {
	return &sandboxState{s: s, doctorDone: make(chan struct{})}
}

// selfTest runs the tier's self-test
// (docs/design/sandbox.md#doctor-and-self-test). A failure stops serve unless
// the sandbox is permissive.
func (st *sandboxState) selfTest(ctx context.Context) error {
	tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := st.s.opts.Tier.SelfTest(tctx)
	st.checkedAt = time.Now()
	st.passed, st.selfErr = err == nil, err
	if err != nil {
		if !st.s.cfg.Sandbox.Permissive {
			return fmt.Errorf("server: sandbox tier %s failed its self-test, refusing to start (run 'ironvise sandbox doctor' for the details and the fix): %w", st.s.opts.Tier.Name(), err)
		}
		st.s.log.Warn("sandbox self-test failed; continuing only because ECTO_SANDBOX_PERMISSIVE=true", "tier", st.s.opts.Tier.Name(), "err", err)
	}
	return nil
}

// startDoctor probes the guarantees in the background: the probes take a
// few seconds, which the listener does not wait for.
func (st *sandboxState) startDoctor() {
	st.doctorOnce.Do(func() {
		if st.s.cfg.Sandbox.Permissive {
			st.report = session.PermissiveReport()
			close(st.doctorDone)
			return
		}
		st.s.wg.Add(1)
		go func() {
			defer st.s.wg.Done()
			defer close(st.doctorDone)
			ctx, cancel := context.WithTimeout(st.s.bg, 2*time.Minute)
			defer cancel()
			st.report = sandbox.Doctor(ctx, st.s.opts.Tier, true)
		}()
	})
}

// sandboxReport is the SandboxReport JSON of
// docs/design/api.md#sandbox-report.
type sandboxReport struct {
	Tier       string             `json:"tier"`
	Platform   string             `json:"platform"`
	Permissive bool               `json:"permissive"`
	Status     string             `json:"status"`
	CheckedAt  string             `json:"checked_at"`
	TierName   string             `json:"tier_name"`
	Guarantees []sandboxGuarantee `json:"guarantees"`
	Problems   []sandboxProblem   `json:"problems"`
	Enforced   *sandbox.Enforced  `json:"enforced"`
	Notes      []string           `json:"notes"`
}

type sandboxGuarantee struct {
	Name     string `json:"name"`
	Required bool   `json:"required"`
	Achieved bool   `json:"achieved"`
	Detail   string `json:"detail"`
}

type sandboxProblem struct {
	Message string `json:"message"`
	Fix     string `json:"fix"`
}

// tierKind maps a tier name to the tier kinds of ECTO_SANDBOX_TIER.
func (st *sandboxState) tierKind() string {
	c := st.s.cfg.Sandbox
	switch {
	case c.Tier != "":
		return c.Tier
	case c.FCBinary != "":
		return "firecracker"
	case c.DockerImage != "":
		return "docker"
	}
	return "native"
}

// handleSandbox is route 45. It waits for the background doctor (bounded by
// the request) so the guarantees are the probed ones.
func (s *Server) handleSandbox(rc *reqCtx) {
	st := s.sandbox
	select {
	case <-st.doctorDone:
	case <-rc.r.Context().Done():
		return
	}
	rep := sandboxReport{
		Tier: st.tierKind(), Platform: runtime.GOOS + "/" + runtime.GOARCH, Permissive: s.cfg.Sandbox.Permissive,
		Status: "passed", CheckedAt: ts(st.checkedAt), TierName: string(s.opts.Tier.Name()),
		Guarantees: []sandboxGuarantee{}, Problems: []sandboxProblem{}, Enforced: st.report.Enforced, Notes: st.report.Notes,
	}
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	if !st.passed {
		rep.Status = "failed"
		p := sandboxProblem{Message: st.selfErr.Error()}
		var ue *sandbox.UnavailableError
		if errors.As(st.selfErr, &ue) {
			p.Fix = ue.Fix
		}
		rep.Problems = append(rep.Problems, p)
	}
	if st.report.Problem != "" {
		rep.Problems = append(rep.Problems, sandboxProblem{Message: st.report.Problem})
	}
	for _, g := range st.report.Guarantees {
		rep.Guarantees = append(rep.Guarantees, sandboxGuarantee{
			Name: g.Name, Required: g.State != sandbox.StateNotApplicable, Achieved: g.State == sandbox.StateEnforced, Detail: g.Evidence,
		})
	}
	rc.writeJSON(200, rep)
}

// handleHealthz is route 3: the process serves HTTP.
func (s *Server) handleHealthz(rc *reqCtx) { rc.writeJSON(200, map[string]string{"status": "ok"}) }

// handleReadyz is route 4: the database answers a ping within 1 s and the
// sandbox self-test passed (or failed in permissive mode).
func (s *Server) handleReadyz(rc *reqCtx) {
	ctx, cancel := context.WithTimeout(rc.r.Context(), time.Second)
	defer cancel()
	checks := map[string]string{"database": "ok", "sandbox": "ok"}
	ready := true
	if err := s.ledger().Ping(ctx); err != nil {
		checks["database"], ready = "failed", false
	}
	switch {
	case s.cfg.Sandbox.Permissive:
		checks["sandbox"] = "permissive"
	case !s.sandbox.passed:
		checks["sandbox"], ready = "failed", false
	}
	status, code := "ready", 200
	if !ready {
		status, code = "not_ready", 503
	}
	rc.writeJSON(code, map[string]any{"status": status, "checks": checks})
}

// handleStatus is route 2.
func (s *Server) handleStatus(rc *reqCtx) {
	rc.writeJSON(200, map[string]any{"demo_mode": s.cfg.Server.DemoMode, "version": s.opts.Version, "product": "ironvise", "api_compat": "0.6.3"})
}
