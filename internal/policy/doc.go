// Package policy is check 2 of the pipeline: the TOML policy engine
// (docs/design/checks.md#policy-engine) and the approval-gate expressions it
// carries (docs/design/checks.md#approval-gates).
//
// # What a policy decides
//
// A policy is one TOML file that narrows what an agent may do beyond the
// structural tripwire: which actions it may take, which programs a
// run_command may run (command rules, an executables allowlist), which
// files it may read or redirect to (path rules), which hosts an http_get
// may reach (domain rules), which steps need a human (approval gates), and
// what to redact from observations (observation rules). The policy never
// widens the tripwire: both run, and the first deny stops the intent.
//
// Command rules can test options and the subcommand (options,
// option_value, subcommand) with the option model the tripwire uses
// (package shell), so a rule for `rm -r` also sees `rm -vr` and
// `rm --recur`, and a rule for `npm install` sees `npm --registry R i`.
//
// Rules are not first-match. Every rule is evaluated against every item of
// the step (each simple command, each path, the URL host); each item takes
// its most restrictive matching decision (deny > require_approval > allow)
// or its default, and the step takes the most restrictive item. So the
// order of rules never changes the outcome, and an allow rule never
// overrides a matching deny rule.
//
// # Fail closed at load
//
// Everything a rule needs at run time — regexes, path and basename globs,
// CIDRs, gate expressions — is compiled when the file is loaded. A file
// with any problem does not load: every problem is reported, one per line
// as `<file>:<line>: <key path>: <problem>`, and the session does not start.
// Nothing is compiled or guessed at evaluation time, so evaluation cannot
// fail.
//
// # Usage
//
//	p, err := policy.Load("soc2-audit", policy.Options{DataDir: dataDir, SHA256: pin})
//	if err != nil {
//		return err // *policy.LoadError: one "<file>:<line>: <key>: <problem>" per line
//	}
//	view := tw.View(ctx, in)        // tripwire.View, computed once per step
//	v := p.Evaluate(view)           // verdict.Verdict, check "policy"
//	// ... tripwire ...
//	if req, ok := p.TriggeredGates(view, v); ok {
//		// one approval request: req.Gates, req.Reasons, req.TimeoutSeconds, req.OnTimeout
//	}
//	res, abort := scan.ApplyRules(res, p.ObservationRules()) // after execution
//
// A nil *Policy is valid and means "no policy loaded": Evaluate allows with
// the message "no policy loaded" and no gate ever triggers.
//
// # Shipped packs
//
// Four packs are embedded in the binary (packs/*.toml): soc2-audit,
// pci-dss-audit, owasp-top10 and iso42001. [Load] accepts their names, the
// names of policies in <data dir>/policies/, or a file path; [List] shows
// them all with their hashes.
//
// # Limitations
//
// The policy sees what the static analysis sees. Command arguments are
// never treated as paths (the sandbox confines what a program opens);
// a redirection target that cannot be determined statically, or one in the
// sandbox's $TMPDIR scratch directory, has no path for a rule to match and
// takes default_path_decision. A script the shell analysis rejects yields
// no command items: the tripwire, which always runs next, denies it.
// Program and path matching fold letter case on darwin and windows only,
// selected by [Options.GOOS].
package policy
