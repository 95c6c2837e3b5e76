package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/ledger/ledgerdb"
)

// adminChangeEvent is the admin_change payload
// (docs/design/api.md#event-payloads): never a token, a webhook bearer token
// or a database password.
type adminChangeEvent struct {
	Target string  `json:"target"`
	Action string  `json:"action"`
	Name   *string `json:"name"`
	Actor  string  `json:"actor"`
}

// audited returns the ledger writer whose token and webhook writes carry
// this request's admin_change event in their own transaction: a change
// that cannot be recorded is not made (docs/ledger.md).
func (s *Server) audited(rc *reqCtx, target, action string, name *string) ledger.AdminWriter {
	return s.ledger().Audited(adminChangeEvent{Target: target, Action: action, Name: name, Actor: rc.who.actor()})
}

// adminChange records an administrative change that lives outside the
// ledger database (a file: policies, settings, the tripwire config), so it
// cannot share the event's transaction: callers record it before the
// change takes effect, so a failure between leaves a recorded change that
// did not happen rather than a change nobody recorded.
func (s *Server) adminChange(rc *reqCtx, target, action string, name *string) error {
	_, err := s.ledger().Append(context.WithoutCancel(rc.r.Context()), ledger.InstanceSessionID, ledger.TypeAdminChange,
		adminChangeEvent{Target: target, Action: action, Name: name, Actor: rc.who.actor()})
	if err != nil {
		return fmt.Errorf("record admin_change: %w", err)
	}
	return nil
}

// writeRecorded writes a file of the data directory (name for messages)
// as an administrative change: staged, recorded, then put in place.
func (s *Server) writeRecorded(rc *reqCtx, path, name string, data []byte, target, action string, what *string) error {
	f, err := stageFile(path, data, 0o600)
	if err != nil {
		return fileWriteError(name, err)
	}
	defer f.discard()
	if err := s.adminChange(rc, target, action, what); err != nil {
		return err
	}
	if err := f.commit(); err != nil {
		return fileWriteError(name, err)
	}
	return nil
}

// handleResetDemo is route 44: the embedded ledger is replaced, never
// edited (docs/design/api.md#tokens-webhooks-policies). Tokens, webhooks,
// policies and config carry over.
func (s *Server) handleResetDemo(rc *reqCtx) {
	if !s.cfg.Server.DemoMode {
		rc.fail(errf(http.StatusForbidden, "reset-demo is only available with ECTO_DEMO_MODE=true"))
		return
	}
	if s.target.Kind == ledgerdb.KindPostgres {
		rc.fail(errf(http.StatusConflict, "reset needs an embedded ledger"))
		return
	}
	if err := s.resetDemo(rc); err != nil {
		rc.fail(err)
		return
	}
	rc.writeRawJSON(http.StatusOK, []byte(`{"ok":true,"message":"demo ledger reset"}`))
}

func (s *Server) resetDemo(rc *reqCtx) error {
	ctx := context.WithoutCancel(rc.r.Context())
	// Tokens and webhooks are carried over into the new ledger.
	old := s.ledger()
	tokens, err := old.Tokens(ctx)
	if err != nil {
		return err
	}
	hooks, err := old.Webhooks(ctx)
	if err != nil {
		return err
	}
	// Stop the sessions, end the open streams.
	s.runners.stopAll(ctx)
	s.resetMu.Lock()
	close(s.streamsReset)
	s.streamsReset = make(chan struct{})
	s.resetMu.Unlock()

	s.lmu.Lock()
	defer s.lmu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := old.Close(cctx); err != nil {
		s.log.Warn("reset-demo: closing the old ledger", "err", err)
	}
	if s.target.Kind == ledgerdb.KindSQLite {
		dst := s.target.Path + ".reset-" + strconv.FormatInt(time.Now().Unix(), 10)
		for _, suffix := range []string{"", "-wal", "-shm"} {
			if err := os.Rename(s.target.Path+suffix, dst+suffix); err != nil && !os.IsNotExist(err) {
				return fmt.Errorf("reset-demo: move the old ledger aside: %w", err)
			}
		}
		// The replacement starts a new log on purpose: the checkpoint
		// remembered for the old one goes aside with it, or the new
		// ledger would be refused as a rollback.
		cp := ledger.RememberedCheckpointPath(s.cfg.DataDir)
		if err := os.Rename(cp, dst+".checkpoint.last"); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("reset-demo: move the remembered checkpoint aside: %w", err)
		}
	}
	b, _, err := ledgerdb.OpenBackend(ctx, s.cfg.Ledger.DatabaseURL, s.cfg.DataDir, s.cfg.Ledger.PoolSize)
	if err != nil {
		return fmt.Errorf("reset-demo: open a new ledger: %w", err)
	}
	l, err := ledger.New(ctx, &observedBackend{Backend: b, committed: s.committed}, s.ledgerOptions())
	if err != nil {
		b.Close()
		return fmt.Errorf("reset-demo: open a new ledger: %w", err)
	}
	s.l = l
	for _, t := range tokens {
		if err := l.PutToken(ctx, t); err != nil {
			return fmt.Errorf("reset-demo: carry over tokens: %w", err)
		}
	}
	for _, w := range hooks {
		w.ID = uuid.Nil // the new ledger names it anew, as before
		if _, err := l.CreateWebhook(ctx, w); err != nil {
			return fmt.Errorf("reset-demo: carry over webhooks: %w", err)
		}
	}
	size, err := l.LogSize(ctx)
	if err != nil {
		return err
	}
	s.feed.reset(size)
	s.sec.reset()
	_, err = l.Append(ctx, ledger.InstanceSessionID, ledger.TypeAdminChange,
		adminChangeEvent{Target: "demo_reset", Action: "update", Actor: rc.who.actor()})
	return err
}
