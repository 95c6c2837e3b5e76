package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/webhook"
)

type webhookJSON struct {
	ID             string   `json:"id"`
	Label          string   `json:"label"`
	URL            string   `json:"url"`
	SIEMFormat     string   `json:"siem_format"`
	FilterKinds    []string `json:"filter_kinds"`
	Enabled        bool     `json:"enabled"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`
	HasBearerToken bool     `json:"has_bearer_token"`
}

func toWebhook(w *ledger.Webhook) webhookJSON {
	kinds := w.FilterKinds
	if kinds == nil {
		kinds = []string{}
	}
	return webhookJSON{ID: w.ID.String(), Label: w.Label, URL: w.URL, SIEMFormat: w.SIEMFormat, FilterKinds: kinds, Enabled: w.Enabled,
		CreatedAt: ts(w.CreatedAt), UpdatedAt: ts(w.UpdatedAt), HasBearerToken: w.BearerToken != ""}
}

// handleListWebhooks is route 40: never a bearer token.
func (s *Server) handleListWebhooks(rc *reqCtx) {
	list, err := s.ledger().Webhooks(rc.r.Context())
	if err != nil {
		rc.fail(err)
		return
	}
	out := make([]webhookJSON, 0, len(list))
	for i := range list {
		out = append(out, toWebhook(&list[i]))
	}
	rc.writeJSON(http.StatusOK, out)
}

// handleCreateWebhook is route 41.
func (s *Server) handleCreateWebhook(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	label, _, e1 := o.str("label", true)
	rawURL, _, e2 := o.str("url", true)
	bearer, _, e3 := o.str("bearer_token", false)
	format, hasFormat, e4 := o.str("siem_format", false)
	kinds, hasKinds, e5 := o.strings("filter_kinds")
	enabled, hasEnabled, e6 := o.boolean("enabled", false)
	if err := firstAPIError(e1, e2, e3, e4, e5, e6); err != nil {
		rc.fail(err)
		return
	}
	label = strings.TrimSpace(label)
	if label == "" || len(label) > 200 {
		rc.fail(errf(http.StatusBadRequest, "label must be a non-empty name of at most 200 characters"))
		return
	}
	if !hasFormat {
		format = "json"
	}
	if !webhook.ValidFormat(format) {
		rc.fail(errf(http.StatusBadRequest, "siem_format %q is unknown (accepted: json, cef, leef)", format))
		return
	}
	if !hasKinds {
		kinds = append([]string(nil), webhook.DefaultKinds...)
	}
	for _, k := range kinds {
		if !webhook.ValidKind(k) {
			rc.fail(errf(http.StatusBadRequest, "filter kind %q is unknown (accepted: %s)", k, strings.Join(webhook.Kinds, ", ")))
			return
		}
	}
	if strings.ContainsAny(bearer, "\r\n") {
		rc.fail(errf(http.StatusBadRequest, "bearer_token must not contain line breaks"))
		return
	}
	if problem := s.checkWebhookTarget(rc.r.Context(), rawURL); problem != "" {
		rc.fail(errf(http.StatusBadRequest, "url: %s", problem))
		return
	}
	if !hasEnabled {
		enabled = true
	}
	wid, err := s.ledger().NewWebhookID()
	if err != nil {
		rc.fail(err)
		return
	}
	id := wid.String()
	w, err := s.audited(rc, "webhook", "create", &id).CreateWebhook(rc.r.Context(), ledger.Webhook{
		ID: wid, Label: label, URL: rawURL, SIEMFormat: format, FilterKinds: kinds, Enabled: enabled, BearerToken: bearer,
	})
	if s.webhookWritten(rc, wid, err) {
		rc.writeJSON(http.StatusCreated, toWebhook(&w))
	}
}

// checkWebhookTarget applies the URL rules of
// docs/design/api.md#tokens-webhooks-policies; it returns "" when the URL is
// acceptable. SSRF: a webhook must never make IronVise post ledger content to
// its own host, the cloud metadata service or the internal network; delivery
// re-checks every address at connect time.
func (s *Server) checkWebhookTarget(ctx context.Context, raw string) string {
	if raw == "" {
		return "must not be empty"
	}
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := webhook.ValidateURL(lctx, raw, s.cfg.Webhook.AllowPrivateTargets, nil); err != nil {
		return err.Error()
	}
	return ""
}

func (rc *reqCtx) webhookID() (ledger.Webhook, error) {
	id, err := parseUUID(rc.params["id"])
	if err != nil {
		return ledger.Webhook{}, errf(http.StatusBadRequest, "webhook id: %v", err)
	}
	return ledger.Webhook{ID: id}, nil
}

// handleToggleWebhook is route 42: sets enabled to the given value.
func (s *Server) handleToggleWebhook(rc *reqCtx) {
	o, err := rc.bodyObject()
	if err != nil {
		rc.fail(err)
		return
	}
	enabled, _, err := o.boolean("enabled", true)
	if err != nil {
		rc.fail(err)
		return
	}
	id, aw, ok := s.webhookChange(rc, "update")
	if !ok {
		return
	}
	w, err := aw.SetWebhookEnabled(rc.r.Context(), id, enabled)
	if s.webhookWritten(rc, id, err) {
		rc.writeJSON(http.StatusOK, toWebhook(&w))
	}
}

// handleDeleteWebhook is route 43.
func (s *Server) handleDeleteWebhook(rc *reqCtx) {
	id, aw, ok := s.webhookChange(rc, "delete")
	if !ok {
		return
	}
	if s.webhookWritten(rc, id, aw.DeleteWebhook(rc.r.Context(), id)) {
		rc.noContent()
	}
}

// webhookChange returns the webhook id of the route and the writer whose
// write to it carries the admin_change of action; false once it answered
// a bad id.
func (s *Server) webhookChange(rc *reqCtx, action string) (uuid.UUID, ledger.AdminWriter, bool) {
	ref, err := rc.webhookID()
	if err != nil {
		rc.fail(err)
		return uuid.Nil, ledger.AdminWriter{}, false
	}
	name := ref.ID.String()
	return ref.ID, s.audited(rc, "webhook", action, &name), true
}

// webhookWritten answers a failed write to webhook id and reports whether
// it succeeded; the dispatcher then reloads the registered webhooks.
func (s *Server) webhookWritten(rc *reqCtx, id uuid.UUID, err error) bool {
	if errors.Is(err, ledger.ErrNotFound) {
		rc.fail(errf(http.StatusNotFound, "webhook %s not found", id))
		return false
	}
	if err != nil {
		rc.fail(err)
		return false
	}
	s.reloadWebhooks(rc)
	return true
}

func (s *Server) reloadWebhooks(rc *reqCtx) {
	if s.hooks != nil {
		if err := s.hooks.Refresh(context.WithoutCancel(rc.r.Context())); err != nil {
			s.log.Warn("webhook: reload the registered webhooks", "err", err)
		}
	}
}
