package server

import (
	"net/http"

	"github.com/ironvise/ironvise/internal/hook"
)

// routes builds the route table of docs/design/api.md#routes.
func (s *Server) routes() {
	const (
		get, post, put, del = http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete
	)
	add := func(method, pattern string, a access, lim limiter, body bodyKind, op string, h func(*reqCtx)) *route {
		r := &route{method: method, pattern: pattern, access: a, limit: lim, body: body, op: op, handler: h}
		s.router.add(r)
		return r
	}
	add(get, "/", public, limitNone, bodyNone, "view the dashboard", s.handleDashboard)                                             // 1
	add(get, "/api/status", public, limitNone, bodyNone, "read the status", s.handleStatus)                                         // 2
	add(get, "/healthz", public, limitNone, bodyNone, "check health", s.handleHealthz)                                              // 3
	add(get, "/readyz", public, limitNone, bodyNone, "check readiness", s.handleReadyz)                                             // 4
	add(get, "/api/sessions", anyRole, limitGlobal, bodyNone, "list sessions", s.handleListSessions)                                // 5
	add(post, "/api/sessions", writeRole, limitSession, bodyJSON, "create sessions", s.handleCreateSession)                         // 6
	add(get, "/api/sessions/{id}", anyRole, limitGlobal, bodyNone, "read sessions", s.handleGetSession)                             // 7
	add(post, "/api/sessions/{id}/seal", writeRole, limitGlobal, bodyNone, "seal sessions", s.handleSeal)                           // 8
	add(post, "/api/sessions/{id}/events", writeRole, limitGlobal, bodyJSON, "append events", s.handleAppend)                       // 9
	add(get, "/api/events", anyRole, limitGlobal, bodyNone, "read events", s.handleEvents)                                          // 10
	add(get, "/api/sessions/{id}/verify", anyRole, limitGlobal, bodyNone, "verify sessions", s.handleVerify)                        // 11
	add(get, "/api/sessions/{id}/compliance", anyRole, limitGlobal, bodyNone, "read compliance bundles", s.handleCompliance)        // 12
	add(get, "/api/sessions/{id}/vc", anyRole, limitGlobal, bodyNone, "read credentials", s.handleVC)                               // 13
	add(get, "/api/sessions/{id}/vc/verify", anyRole, limitGlobal, bodyNone, "verify credentials", s.handleVCVerify)                // 14
	add(get, "/api/stream", anyRole, limitSSE, bodyNone, "stream events", s.handleStream).stream = true                             // 15
	add(get, "/api/sessions/{id}/events/stream", anyRole, limitSSE, bodyNone, "stream events", s.handleSessionStream).stream = true // 16
	add(post, "/api/sessions/{id}/intents", writeRole, limitGlobal, bodyJSON, "submit intents", s.handleIntent)                     // 17
	add(get, "/api/sessions/{id}/events/{seq}/proof", anyRole, limitGlobal, bodyNone, "read proofs", s.handleProof)                 // 18
	add(get, "/api/checkpoints/latest", anyRole, limitGlobal, bodyNone, "read checkpoints", s.handleLatestCheckpoint)               // 19
	add(get, "/api/certificates/{id}", anyRole, limitGlobal, bodyNone, "export certificates", s.handleCertificate)                  // 20
	add(get, "/api/reports/{id}", anyRole, limitGlobal, bodyNone, "read reports", s.handleReport)                                   // 21
	add(post, "/api/chat", writeRole, limitSession, bodyJSON, "chat", s.handleChat)                                                 // 22
	add(post, "/api/sessions/{id}/chat", writeRole, limitSession, bodyJSON, "chat", s.handleSessionChat)                            // 23
	add(get, "/api/approvals/{id}/pending", anyRole, limitGlobal, bodyNone, "read approvals", s.handlePending)                      // 24
	add(post, "/api/approvals/{id}", adminRole, limitGlobal, bodyJSON, "decide approvals", s.handleDecide)                          // 25
	add(get, "/api/policies", anyRole, limitGlobal, bodyNone, "list policies", s.handleListPolicies)                                // 26
	add(get, "/api/policies/{name}", anyRole, limitGlobal, bodyNone, "read policies", s.handleGetPolicy)                            // 27
	add(put, "/api/policies/{name}", adminRole, limitGlobal, bodyRawText, "write policies", s.handlePutPolicy)                      // 28
	add(del, "/api/policies/{name}", adminRole, limitGlobal, bodyNone, "delete policies", s.handleDeletePolicy)                     // 29
	add(get, "/api/metrics", anyRole, limitGlobal, bodyNone, "read metrics", s.handleMetrics)                                       // 30
	add(get, "/api/metrics/security", anyRole, limitGlobal, bodyNone, "read metrics", s.handleSecurityMetrics)                      // 31
	add(get, "/metrics", adminRole, limitGlobal, bodyNone, "read Prometheus metrics", s.handlePrometheus)                           // 32
	add(get, "/api/config", adminRole, limitGlobal, bodyNone, "read the configuration", s.handleGetConfig)                          // 33
	add(put, "/api/config", adminRole, limitGlobal, bodyJSON, "change the configuration", s.handlePutConfig)                        // 34
	add(get, "/api/tripwire", anyRole, limitGlobal, bodyNone, "read the tripwire", s.handleGetTripwire)                             // 35
	add(get, "/api/config/tripwire", anyRole, limitGlobal, bodyNone, "read the tripwire", s.handleGetTripwire)                      // 35
	add(put, "/api/tripwire", adminRole, limitGlobal, bodyJSON, "change the tripwire", s.handlePutTripwire)                         // 36
	add(put, "/api/config/tripwire", adminRole, limitGlobal, bodyJSON, "change the tripwire", s.handlePutTripwire)                  // 36
	add(get, "/api/tokens", adminRole, limitGlobal, bodyNone, "list tokens", s.handleListTokens)                                    // 37
	add(post, "/api/tokens", adminRole, limitGlobal, bodyJSON, "create tokens", s.handleCreateToken)                                // 38
	add(del, "/api/tokens/{hash}", adminRole, limitGlobal, bodyNone, "delete tokens", s.handleDeleteToken)                          // 39
	add(get, "/api/webhooks", adminRole, limitGlobal, bodyNone, "list webhooks", s.handleListWebhooks)                              // 40
	add(post, "/api/webhooks", adminRole, limitGlobal, bodyJSON, "create webhooks", s.handleCreateWebhook)                          // 41
	add(put, "/api/webhooks/{id}", adminRole, limitGlobal, bodyJSON, "change webhooks", s.handleToggleWebhook)                      // 42
	add(put, "/api/webhooks/{id}/toggle", adminRole, limitGlobal, bodyJSON, "change webhooks", s.handleToggleWebhook)               // 42
	add(del, "/api/webhooks/{id}", adminRole, limitGlobal, bodyNone, "delete webhooks", s.handleDeleteWebhook)                      // 43
	add(post, "/api/admin/reset-demo", adminRole, limitGlobal, bodyNone, "reset the demo ledger", s.handleResetDemo)                // 44
	add(get, "/api/sandbox", anyRole, limitGlobal, bodyNone, "read the sandbox report", s.handleSandbox)                            // 45
	add(post, "/api/sessions/{id}/apply", adminRole, limitGlobal, bodyJSON, "apply workspace changes", s.handleApply)               // 46
	for _, ag := range hook.Agents {
		r := add(post, "/api/hooks/"+string(ag), writeRole, limitGlobal, bodyRawText, "answer agent hooks", s.handleHook(ag))
		r.blockOnError = blockHookError(ag)
	}
	// MCP over streamable HTTP (docs/integrations.md#mcp).
	add(post, "/mcp", writeRole, limitGlobal, bodyJSON, "use MCP", s.handleMCP)
	add(get, "/mcp", writeRole, limitSSE, bodyNone, "use MCP", s.handleMCP).stream = true
	add(del, "/mcp", writeRole, limitGlobal, bodyNone, "use MCP", s.handleMCP)
}
