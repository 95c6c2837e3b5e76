package policy

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ironvise/ironvise/internal/tripwire"
)

// TestRuleOrderNeverChangesTheOutcome is the property of
// docs/design/checks.md#policy-precedence: "the order of rules never changes
// the outcome". Random policies are written with their rules (and gates) in
// several random orders; every order must give the same decision, code and
// gates on every view.
func TestRuleOrderNeverChangesTheOutcome(t *testing.T) {
	e := newEnv(t, "linux")
	e.write(t, "certs/a.key", "k")
	views := []*tripwire.View{
		e.rc("ls -la"), e.rc("nmap -r / 10.0.0.1"), e.rc("git push origin"), e.rc("rm -rf build; cat x"),
		e.rc("ncat -l 80 > out.key"), e.rc("cat < /etc/hostname; python3 -V"), e.rc("$X y"), e.rc("timeout 3 nmap h"),
		e.rf("certs/a.key"), e.rf("/etc/ssl/openssl.cnf"), e.rf("/etc/shadow"), e.rf("notes.txt"),
		e.hg("https://example.com/"), e.hg("https://api.example.com/"), e.hg("https://internal.example.com/"),
		e.hg("https://fail.example.com/"), e.hg("https://api.github.com/"), e.complete(),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const policies, orders = 300, 4
	for n := 0; n < policies; n++ {
		header, rules, gates := randomPolicy(rng)
		var first []string
		for o := 0; o < orders; o++ {
			rs, gs := slices.Clone(rules), slices.Clone(gates)
			rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			rng.Shuffle(len(gs), func(i, j int) { gs[i], gs[j] = gs[j], gs[i] })
			src := header + "approval_gates = [\n  " + strings.Join(gs, ",\n  ") + "\n]\n" + strings.Join(rs, "\n") + "\n"
			p := mustParse(t, src)
			var got []string
			for _, v := range views {
				pv := p.Evaluate(v)
				g := slices.Clone(pv.Gates)
				slices.Sort(g)
				line := fmt.Sprintf("%s %s %v", pv.Decision, pv.Code, g)
				if req, ok := p.TriggeredGates(v, pv); ok {
					ids := slices.Clone(req.Gates)
					slices.Sort(ids)
					line += fmt.Sprintf(" request %v %d %s", ids, req.TimeoutSeconds, req.OnTimeout)
				}
				got = append(got, line)
			}
			if o == 0 {
				first = got
				continue
			}
			for i := range got {
				if got[i] != first[i] {
					t.Fatalf("policy %d, view %d: order 0 gives %q, order %d gives %q\n--- policy:\n%s", n, i, first[i], o, got[i], src)
				}
			}
		}
	}
}

// randomPolicy returns a policy header, its rules as [[table]] blocks and
// its gates as inline tables.
func randomPolicy(rng *rand.Rand) (header string, rules, gates []string) {
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	decision := func() string { return pick("allow", "deny", "require_approval") }
	gateIDs := []string{"g1", "g2", "g3"}
	for _, id := range gateIDs {
		g := fmt.Sprintf(`{ id = %q, timeout_seconds = %d, on_timeout = %q`, id, 10+rng.IntN(100), pick("deny", "allow"))
		if rng.IntN(2) == 0 {
			g += fmt.Sprintf(`, when = %q`, pick("program_is('nmap')", "path_matches('*.key')", "url_host_in_cidr('10.0.0.0/8')", "action == 'read_file'"))
		}
		gates = append(gates, g+" }")
	}
	withGate := func(d string) string {
		if d == "require_approval" && rng.IntN(2) == 0 {
			return fmt.Sprintf(`decision = %q, gate = %q`, d, pick(gateIDs...))
		}
		return fmt.Sprintf(`decision = %q`, d)
	}
	header = fmt.Sprintf("name = \"random\"\ndefault_command_decision = %q\ndefault_path_decision = %q\ndefault_domain_decision = %q\n",
		decision(), decision(), decision())
	if rng.IntN(3) == 0 {
		header += `executables = ["@base", "nmap", "git", "rm"]` + "\n"
	}
	// Each rule is a [[table]] block, so shuffling the blocks shuffles the
	// rules within each table (and interleaves the tables).
	for i, n := 0, 1+rng.IntN(6); i < n; i++ {
		r := fmt.Sprintf("[[command_rules]]\nid = \"c%d\"\nprogram = %q\n%s", i, pick("ls", "cat", "nmap", "git", "rm", "*", "{nc,ncat}", "py*"), inlineKV(withGate(decision())))
		if rng.IntN(2) == 0 {
			r += fmt.Sprintf("args = %q\n", pick("-r", "push", "^-", "."))
		}
		rules = append(rules, r)
	}
	for i, n := 0, rng.IntN(5); i < n; i++ {
		match := pick(`glob = "*.key"`, `glob = "/etc/**"`, `glob = ["**/secret*", "*.cnf"]`, `prefix = "/etc/shadow"`, `prefix = "/"`)
		r := fmt.Sprintf("[[path_rules]]\nid = \"p%d\"\n%s\n%s", i, match, inlineKV(withGate(decision())))
		if rng.IntN(2) == 0 {
			r += fmt.Sprintf("actions = [%q]\n", pick("read_file", "redirect_read", "redirect_write"))
		}
		rules = append(rules, r)
	}
	for i, n := 0, rng.IntN(5); i < n; i++ {
		match := pick(`host = "example.com"`, `host = "api.example.com"`, `host = ["github.com", "nginx.org"]`, `cidr = "10.0.0.0/8"`, `cidr = ["93.184.0.0/16", "0.0.0.0/0"]`)
		rules = append(rules, fmt.Sprintf("[[domain_rules]]\nid = \"d%d\"\n%s\n%s", i, match, inlineKV(withGate(decision()))))
	}
	return header, rules, gates
}

// inlineKV turns `a = 1, b = 2` into one key per line.
func inlineKV(s string) string { return strings.ReplaceAll(s, ", ", "\n") + "\n" }
