// Package scan is the output scanner and the goal prompt scan of IronVise
// (docs/design/checks.md#prompt-scan and
// docs/design/checks.md#output-scanner).
//
// Everything an action produces (stdout, stderr, file content, HTTP bodies,
// execution errors) goes back to the agent's model as an observation. That
// text is attacker-controlled: a web page or a file can carry instructions
// aimed at the model ("ignore previous instructions …"), an action object the
// model might copy, or encoded payloads; and it can hold credentials. The
// scanner first replaces credentials (internal/redact, at every sensitivity),
// then labels the rest. The ledger records that text unchanged otherwise,
// with the labeled spans ([Result.Content], [Result.Spans]); at medium and
// high the model reads a copy in which the spans aimed at it are withheld
// ([ModelView]). The goal gets a separate, stricter scan once per session.
//
// # Usage
//
//	sc, err := scan.New(scan.Medium)
//	if err != nil { ... }
//
//	// Executor side: collect each stream, then cap and normalise it.
//	var out scan.Collector
//	cmd.Stdout = &out
//	stdout, truncated := out.Text()
//
//	// Compose the observation (docs/design/sandbox.md#sandbox-result), then scan it with the
//	// session's redactor, whose placeholders carry tags.
//	res := sc.ScanWith(composed, redact.ForSession(sessionID))
//	res.Truncated = res.Truncated || truncated
//	res, abort := scan.ApplyRules(res, policyRules)
//	// Record res.Content and res.Spans; the model reads res.Sanitized,
//	// which ModelView(res.Content, res.Spans) rebuilds from the record.
//
//	// Before step 1:
//	v := sc.ScanGoal(goal) // check prompt_scan: allow, flag or deny
//
// # Design
//
// A naive pass of every pattern over the text is far too slow
// (docs/design/checks.md#scanner-pipeline), so a [Scanner] compiles its lists
// once and each scan:
//
//   - builds one ASCII-lowercased copy of the normalised text that keeps byte
//     offsets, so case-insensitive patterns are written in lowercase without
//     (?i) and every span maps straight back to the original;
//   - finds which hints occur, and where first, with one hashed-trigram pass
//     (the structural needles and the patterns' literal prefixes are hints
//     too), and runs a pattern only when one of its hints occurs;
//   - runs each pattern as literal-prefixed variants: a leading alternation
//     is split, a leading  or (?m)^ is checked by hand, and at each prefix
//     occurrence cheap necessary conditions (the byte after the prefix, the
//     literals the match must hold) are tested before an anchored regexp
//     runs over a window that provably holds any match starting there (a
//     greedy run such as "={4,}" or a long base64 token is measured with a
//     byte loop, and the regexp only reads what follows it);
//   - runs the detectors (invisible and bidi characters, mixed-script words,
//     base64 runs) as one hand-written pass, eight bytes at a time on ASCII.
//
// Every pass reads the original normalised text, never another pass's
// output, so labels do not depend on list order. Characters that are deleted
// from the sanitized text (invisible and bidi controls) also make a second,
// compacted view of the text, because that view is what the model reads
// after sanitizing: "ign\u00ADore previous instructions" must not become a
// clean injection once the soft hyphen is gone. The regex lists read the
// lines around each deletion in that view; the structural passes read all
// of it.
//
// # Limitations
//
//   - Detection is pattern-based. A model can be addressed in ways no list
//     covers (paraphrase, other languages, images of text); the scanner
//     lowers the risk, the guard and the sandbox still bound the damage.
//   - Lowercasing is ASCII-only (byte offsets must not move). NFKC folds most
//     compatibility look-alikes (fullwidth, mathematical letters, ligatures);
//     Cyrillic and Greek homoglyphs are caught by the mixed-script detector,
//     other scripts are not.
//   - Base64 decoding is limited to [MaxBase64Runs] runs that decode to text
//     per observation and to [MaxEncodedDepth] nested layers.
//   - In the compacted view the regex lists read one line before and after
//     each deletion; a match that spans a deleted character and runs over
//     more lines than that is missed there (the deletion itself is labeled).
//   - Policy observation_rules are compiled by the policy package; this
//     package only applies them ([ApplyRules]).
//   - Hex payloads are decoded when they are one run of hex digits; spaced
//     or escaped hex (\x69) is not.
//   - Redaction shares the scan's time budget
//     (docs/design/checks.md#scanner-pipeline); its limits are those of
//     internal/redact.
package scan
