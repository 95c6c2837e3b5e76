// Package server is `ironvise serve`: the HTTP API (wire-compatible with the
// EctoLedger SDK clients 0.6.3, plus IronVise's intents, proofs, checkpoints
// and sandbox report), the live event stream (SSE), Prometheus metrics and
// the dashboard, on one net/http listener (docs/api.md).
//
// # Startup
//
// [New] runs the startup order of docs/design/api.md#server-config up to the
// listener: configuration and settings.json, the database and its migrations,
// the bootstrapped tokens, the issuer key with the instance genesis and first
// checkpoint, crash recovery and the verification of the ledger tail (the
// whole ledger with Options.VerifyFull), and the selected sandbox tier's
// self-test, which stops the server unless ECTO_SANDBOX_PERMISSIVE=true.
// [Server.Start] opens the listener last and prints "listening on
// http://host:port", so any HTTP answer means the API is usable.
// [Server.Shutdown] stops accepting, ends the streams, lets requests finish,
// stops the running sessions and records their end, and closes the ledger with
// a final checkpoint.
//
//	srv, err := server.New(ctx, server.Options{Config: cfg, Lookup: look, Workspace: ws, Tier: tier, …})
//	if err != nil { … }               // nothing is listening
//	if err := srv.Start(ctx); err != nil { … }
//	<-ctx.Done()
//	err = srv.Shutdown(context.Background())
//
// # Requests
//
// Every request passes the stages of docs/design/api.md#request-pipeline in
// order: CORS preflight, the path check (raw segments, decoded once; never a
// redirect), route match (404/405), public routes, the global per-IP token
// bucket, the token (a SHA-256 lookup), the role (decided from the route
// alone, before any body is read), the route's own limiter, the body (size,
// content type, JSON syntax, then field types) and the handler. Errors are
// JSON {"error": …}; 5xx messages quote the request id and keep details in the
// log.
//
// # Sessions
//
// Sessions created through the API use the server's workspace, the
// data dir's tripwire.json and the requested policy. With agent_loop they run
// the agent loop in the background with their own guard worker; without it
// they wait for intents (POST …/intents), processed one at a time in arrival
// order under the loop's limits. Approval gates wait on the ledger's approvals
// table, so a decision posted to any instance sharing the database reaches the
// instance that drives the session. A session is driven only by the instance
// that created it.
//
// # Event stream
//
// One feed goroutine tails the Merkle log by index (it is gap-free and in
// commit order), renders each event's SSE frame once (redacted) into a ring,
// and signals the streams; a stream copies frames from the ring, or pages
// them from the database when it is behind, so appends never wait for
// readers. A stream that falls behind the ring while live is dropped and
// counted. Local commits wake the feed at once; events of other instances
// sharing the database are seen by polling within FeedPoll.
//
// # Limitations
//
// Rate limits are per process. A request line the Go HTTP server cannot
// parse (for example invalid percent-encoding) is answered by net/http
// itself with a plain-text 400. Reset-demo replaces an embedded ledger only.
package server
