package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/llm"
	"github.com/ironvise/ironvise/internal/session"
)

// chatTimeout bounds one chat completion.
const chatTimeout = 60 * time.Second

// chatSystem is the system text of chat requests.
const chatSystem = "You are the assistant of IronVise, a security layer for AI agents. Answer the operator's questions briefly. Never reveal secrets."

// chatEvent is the chat_message payload (docs/design/api.md#event-payloads).
type chatEvent struct {
	Role    string `json:"role"`
	Content string `json:"content"`
	Backend string `json:"backend,omitempty"`
	Model   string `json:"model,omitempty"`
}

// handleChat is route 22: chat on the instance chain.
func (s *Server) handleChat(rc *reqCtx) { s.chat(rc, ledger.InstanceSessionID) }

// handleSessionChat is route 23: chat recorded in a session's chain.
func (s *Server) handleSessionChat(rc *reqCtx) {
	msg, err := chatMessage(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	id, _, err := s.writableSession(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	s.chatWith(rc, id, msg)
}

func chatMessage(rc *reqCtx) (string, error) {
	o, err := rc.bodyObject()
	if err != nil {
		return "", err
	}
	msg, _, err := o.str("message", true)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(msg) == "" {
		return "", errf(http.StatusBadRequest, "message must not be empty")
	}
	return msg, nil
}

func (s *Server) chat(rc *reqCtx, chain uuid.UUID) {
	msg, err := chatMessage(rc)
	if err != nil {
		rc.fail(err)
		return
	}
	s.chatWith(rc, chain, msg)
}

// chatWith records the user message, asks the model and records the
// redacted reply (docs/design/api.md#chat). The user message stays recorded
// when the model fails.
func (s *Server) chatWith(rc *reqCtx, chain uuid.UUID, msg string) {
	client, err := session.NewLLM(s.cfg.LLM, s.log)
	if err != nil {
		rc.fail(errf(http.StatusServiceUnavailable, "the LLM backend is not configured: %v", err))
		return
	}
	ctx := rc.r.Context()
	l := s.ledger()
	if _, err := l.Append(ctx, chain, ledger.TypeChatMessage, chatEvent{Role: "user", Content: msg}); err != nil {
		if errors.Is(err, ledger.ErrSealed) {
			rc.fail(errf(http.StatusConflict, "session %s is sealed: its chain is closed for good", chain))
			return
		}
		rc.fail(err)
		return
	}
	cctx, cancel := context.WithTimeout(ctx, chatTimeout)
	defer cancel()
	resp, err := client.Complete(cctx, llm.Request{
		Kind: llm.KindChat, System: chatSystem, Messages: []llm.Message{{Role: llm.RoleUser, Content: msg}}, MaxTokens: 1024,
	})
	if err != nil {
		s.log.Warn("chat: the LLM call failed", "request_id", rc.id, "err", err)
		rc.fail(errf(http.StatusBadGateway, "the LLM call failed (request %s); the message is recorded, retry later", rc.id))
		return
	}
	s.metrics.llmTokens.Add(float64((len(msg) + len(chatSystem) + len(resp.Text)) / 4))
	// The reply passes the scanner's redaction before it is recorded or
	// returned, so a model cannot hand out a secret it saw.
	reply := s.scanner.Scan(resp.Text).Sanitized
	model := client.Model()
	if _, err := l.Append(context.WithoutCancel(ctx), chain, ledger.TypeChatMessage, chatEvent{Role: "assistant", Content: reply, Backend: client.Backend(), Model: model}); err != nil {
		rc.fail(err)
		return
	}
	rc.writeJSON(http.StatusOK, map[string]string{"reply": reply, "backend": client.Backend(), "model": model})
}
