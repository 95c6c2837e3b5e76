// Package agent runs the intents of one session: each one passes the
// checks, is committed to the ledger, executed (a command in the sandbox
// tier, a file read or an HTTP GET by IronVise itself) and its output
// scanned and recorded, every stage written before the next one starts.
//
// # Drivers
//
// A [Session] is bound to a ledger session with [Open]; front ends reach it
// through internal/session, which composes the checks, the guard and the
// limits. Three drivers sit on it:
//
//   - [Session.Run], the agent loop: the primary model proposes an intent
//     each step, until the goal completes or a limit, a circuit breaker or
//     an interrupt stops it; the loop then ends and seals the session.
//   - [Session.Step], a single intent from outside (ironvise exec).
//   - [External], intents submitted one at a time (the API's intents
//     endpoint) under the loop's limits; [ResumeExternal] rebuilds one from
//     its recorded events.
//
// [Session.End] is the one sequence that records a session's outcome,
// issues its verifiable credential when asked, and seals its chain.
//
// # Limitations
//
// Steps of one session are serialised; a session's events are the only
// input of its loop state, so a restarted process can resume an external
// session but not an agent loop, whose model conversation is lost.
package agent
