// Package session composes and drives one IronVise session, whatever front
// end asked for it: the command line (audit, exec, demo), the HTTP API
// (serve), and later an agent's pre-tool-use hook or an MCP server.
//
// A session is the same thing everywhere: a goal, the rules it enforces
// (tripwire, policy, guard, approvals), the limits that stop it, a sandbox
// tier that runs its commands, a scanner that reads their output, and a
// hash-chained record in the ledger that ends sealed. Before this package
// each front end assembled those parts itself, so every new limit or
// guard option had to be added in two or three places that could drift
// apart. Here they are computed and opened in one place each.
//
// The package knows nothing of cobra, HTTP or terminals: front ends pass
// callbacks for what they show (the step report) and an approver for what
// they ask (approval gates), and they format errors themselves.
//
// # Lifecycle
//
//  1. Compose: [Limits] computes the effective limits; [NewLLM],
//     [NewScanner], [TierOptions] with [TierFactories] (for
//     sandbox.Select) and [StartGuard] open the model client, the output
//     scanner, the sandbox tier and the guard worker. The
//     caller owns the [Guard] and closes it when the session's work ends.
//  2. Create: [Create] records the session's genesis in the ledger (goal,
//     policy and tripwire hashes, guard, model, tier) and binds it to its
//     checks; [Bind] binds a session that already exists.
//  3. Run: [Session.Run] drives the agent loop until a stop condition,
//     then ends and seals the session itself. A session whose intents come
//     from outside runs them one by one: [Session.Step] for a single
//     intent, or [Session.External] / [Session.Resume] for the loop's
//     limits around submitted intents.
//  4. End and seal: [Session.End] records the outcome and seals the chain;
//     [Seal] seals a session on request (an API client's seal).
//
// # Usage
//
//	rt := &session.Runtime{Ledger: l, Tier: tier, Scanner: sc}
//	g, err := session.StartGuard(ctx, plan, session.GuardOptions{LLM: cfg.LLM})
//	if err != nil { return err }
//	defer g.Close()
//	s, err := session.Create(ctx, rt, session.Spec{Goal: goal, Workspace: ws,
//		Tripwire: tw, Policy: pol, Guard: g, LLM: client,
//		Limits: session.Limits(cfg.Agent, pol, 0, false)})
//	if err != nil { return err }
//	out, err := s.Run(ctx, session.RunOptions{Report: show})
//
// # Limitations
//
// Loading the policy and the tripwire stays with the front ends: the
// command line reads files and flags, the API resolves names and hashes
// and caches the compiled tripwire, and the two refuse different things
// with different messages. The front end also prints any warnings (a
// permissive tier) itself.
package session
