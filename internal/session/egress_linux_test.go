//go:build linux

package session

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/ironvise/ironvise/internal/agent"
	"github.com/ironvise/ironvise/internal/config"
	"github.com/ironvise/ironvise/internal/egress"
	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/verdict"
	"github.com/ironvise/ironvise/internal/webhook"
)

// egressTier runs each command in the real native tier without network
// and then reports fixed proxy connections, as a proxy-mode run of the
// native tier reports them in Result.Egress. It is an interface fake for
// the proxy only: the proxy-mode tier is built and tested on its own
// (internal/sandbox), and what is under test here is what the session does
// with the records: the rules it passes in, the ledger events, the
// observation, the notifications. It keeps the request it received.
type egressTier struct {
	sandbox.Tier
	recs []egress.Record

	mu  sync.Mutex
	got []sandbox.Request
}

func (t *egressTier) Run(ctx context.Context, req sandbox.Request) sandbox.Result {
	t.mu.Lock()
	t.got = append(t.got, req)
	t.mu.Unlock()
	req.Egress = nil
	r := t.Tier.Run(ctx, req)
	r.Egress = slices.Clone(t.recs)
	return r
}

// secretHost is a GitHub token spelled as a DNS label, the way a command
// would smuggle it out through a name lookup or a CONNECT line.
const secretToken = "ghp_r8sk2mp9qx4vt7wl1nb6cj3hf5dg0azye2uq"

func egressRecords() []egress.Record {
	start := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	deny := func(host string, code verdict.Code, reason string) egress.Record {
		return egress.Record{Protocol: egress.ProtoConnect, Client: "127.0.0.1:40000", Host: host, Port: 443, Start: start,
			DurationMS: 1, Verdict: verdict.Deny, Code: code, Reason: reason}
	}
	recs := []egress.Record{
		{Protocol: egress.ProtoConnect, Client: "127.0.0.1:40001", Host: "allowed.test", Port: 443, SNI: "allowed.test",
			Addr: "192.0.2.10:443", BytesUp: 517, BytesDown: 4096, Start: start, DurationMS: 12,
			Verdict: verdict.Allow, Code: verdict.OK, Rule: "allowed.test", Reason: "allowed by allowed.test"},
		deny("denied.test", verdict.EgressDomainNotAllowed, "host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"),
		deny(secretToken+".evil.test", verdict.EgressDomainNotAllowed, "host "+secretToken+".evil.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS"),
	}
	for i := range 5 {
		h := fmt.Sprintf("retry%d.test", i)
		recs = append(recs, deny(h, verdict.EgressDomainNotAllowed, "host "+h+" is not in ECTO_SANDBOX_ALLOWED_DOMAINS"))
	}
	return recs
}

// TestEgressEventsInStep is exec's path in proxy mode: the configured
// list narrowed by the policy reaches the tier, every connection becomes
// an egress event between the command's sandbox_result and its
// observation, in order, in the same two commits as without network; the
// observation names the refused hosts (capped); a token spelled as a host
// name reaches neither the ledger nor a webhook; the session verifies, and
// an edited egress event breaks verification.
func TestEgressEventsInStep(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tier := &egressTier{Tier: f.rt.Tier, recs: egressRecords()}
	f.rt.Tier = tier
	f.rt.Network = config.Network{Mode: config.NetworkProxy, AllowedDomains: []string{"allowed.test", "*.pythonhosted.org", "pypi.org"}}
	pol, err := policy.Parse("p.toml", []byte("name = \"p\"\n[network]\nallowed_domains = [\"allowed.test\", \"files.pythonhosted.org\"]\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	spec := f.spec("exec: fetch", nil)
	spec.Policy = pol
	before := f.writeCommits(t)
	s, err := Prepare(f.rt, spec)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Step(ctx, 1, execIntent(t, "run_command", "command", "cat notes.txt"), agent.SourceAPI)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.End(ctx, ledger.StatusCompleted, "operator:cli"); err != nil {
		t.Fatal(err)
	}
	if got := f.writeCommits(t) - before; got != 2 {
		t.Fatalf("exec with egress events committed %d transactions; want 2, as without network", got)
	}

	// The tier received the narrowed rules.
	if len(tier.got) != 1 || tier.got[0].Egress == nil {
		t.Fatalf("the tier got %d requests, egress %v; want one in proxy mode", len(tier.got), tier.got)
	}
	if got := strings.Join(tier.got[0].Egress.Domains(), ","); got != "allowed.test,files.pythonhosted.org" {
		t.Fatalf("the command's allow list is %s; want the policy's narrowing", got)
	}
	if v := tier.got[0].Egress.CheckHost("pypi.org"); !v.Denied() {
		t.Fatal("pypi.org is allowed although the policy narrowed it away")
	}

	evs, err := f.rt.Ledger.Events(ctx, s.ID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The genesis says what was allowed.
	var genesis struct {
		Network *ledger.SessionNetwork `json:"network"`
	}
	if err := json.Unmarshal(evs[0].Payload, &genesis); err != nil || genesis.Network == nil {
		t.Fatalf("genesis %s (%v); want a network member", evs[0].Payload, err)
	}
	if n := genesis.Network; n.Mode != "proxy" || strings.Join(n.AllowedDomains, ",") != "allowed.test,files.pythonhosted.org" || !n.NarrowedByPolicy {
		t.Fatalf("genesis network %+v; want proxy with the narrowed list", n)
	}

	// Order: sandbox_result, the egress events as reported, the observation.
	var types []string
	var egressEvs []ledger.Event
	for _, e := range evs {
		if e.Type != ledger.TypeCheckVerdict {
			types = append(types, e.Type)
		}
		if e.Type == ledger.TypeEgress {
			egressEvs = append(egressEvs, e)
		}
	}
	want := []string{ledger.TypeGenesis, ledger.TypePromptInput, ledger.TypeIntentProposed, ledger.TypeAction, ledger.TypeSandboxResult}
	for range tier.recs {
		want = append(want, ledger.TypeEgress)
	}
	want = append(want, ledger.TypeObservation, ledger.TypeSessionSealed)
	if !slices.Equal(types, want) {
		t.Fatalf("events (verdicts left out) %v; want %v", types, want)
	}
	for i, e := range egressEvs {
		var p struct {
			Step     int    `json:"step"`
			IntentID string `json:"intent_id"`
			egress.Record
		}
		if err := json.Unmarshal(e.Payload, &p); err != nil {
			t.Fatal(err)
		}
		r := tier.recs[i]
		if p.Step != 1 || p.IntentID != res.IntentID || p.Port != r.Port || p.Verdict != r.Verdict || p.Code != r.Code || p.BytesDown != r.BytesDown {
			t.Fatalf("egress event %d %s; want record %+v of step 1, intent %s", i, e.Payload, r, res.IntentID)
		}
		if i != 2 && p.Host != r.Host {
			t.Fatalf("egress event %d host %q; want %q", i, p.Host, r.Host)
		}
	}
	if !strings.Contains(string(egressEvs[0].Payload), `"addr":"192.0.2.10:443"`) || !strings.Contains(string(egressEvs[0].Payload), `"rule":"allowed.test"`) {
		t.Fatalf("allowed connection recorded as %s", egressEvs[0].Payload)
	}

	// The credential in the host name is in no stored byte.
	for _, e := range evs {
		if bytes.Contains(e.Payload, []byte(secretToken)) {
			t.Fatalf("%s event %d stores the token: %s", e.Type, e.Seq, e.Payload)
		}
	}
	if !strings.Contains(string(egressEvs[2].Payload), "[REDACTED:github-pat") {
		t.Fatalf("the token host is recorded as %s; want a redaction placeholder", egressEvs[2].Payload)
	}

	// The observation the model reads names the refused hosts, capped.
	obs := res.Observation
	if obs == nil {
		t.Fatal("no observation")
	}
	for _, line := range []string{
		"[egress] refused: denied.test:443 — host denied.test is not in ECTO_SANDBOX_ALLOWED_DOMAINS",
		"[egress] and 2 more refused connections",
		"PermitRootLogin yes",
	} {
		if !strings.Contains(obs.ModelView(), line) {
			t.Fatalf("observation %q lacks %q", obs.ModelView(), line)
		}
	}
	if strings.Contains(obs.Content, secretToken) || strings.Contains(obs.Content, "retry4.test") || strings.Contains(obs.Content, "allowed.test") {
		t.Fatalf("observation %q carries the token, more than %d refusals, or an allowed connection", obs.Content, agent.MaxEgressLines)
	}
	if !slices.ContainsFunc(res.SandboxNotes, func(n string) bool { return strings.HasPrefix(n, "egress refused: denied.test:443") }) {
		t.Fatalf("sandbox notes %q; want the refusal for the terminal", res.SandboxNotes)
	}

	// Denials reach SIEM egress, allowed connections do not, and a webhook
	// message carries no token.
	f.mu.Lock()
	notified := slices.Clone(f.notified)
	f.mu.Unlock()
	var denials int
	for _, e := range notified {
		if e.Type != ledger.TypeEgress {
			continue
		}
		denials++
		if k := webhook.Classify(&e); k != webhook.KindEgressDenial {
			t.Fatalf("egress event classified %q; want %q", k, webhook.KindEgressDenial)
		}
		for _, format := range []string{webhook.FormatJSON, webhook.FormatCEF, webhook.FormatLEEF} {
			body, _, err := webhook.NewMessage(webhook.KindEgressDenial, &e, "test").Render(format)
			if err != nil || bytes.Contains(body, []byte(secretToken)) {
				t.Fatalf("%s webhook body %s (%v) carries the token", format, body, err)
			}
		}
	}
	if denials != len(tier.recs)-1 {
		t.Fatalf("%d egress events notified; want the %d denials only", denials, len(tier.recs)-1)
	}

	rep, err := f.rt.Ledger.VerifySession(ctx, s.ID)
	if err != nil || !rep.OK() {
		t.Fatalf("verify: %+v, %v", rep, err)
	}

	// Tampering: the refused host rewritten to the allowed one, as an
	// attacker with the database file could (triggers dropped first).
	db, err := sql.Open("sqlite", filepath.Join(f.cfg.DataDir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{`DROP TRIGGER events_no_update`,
		`UPDATE events SET payload = CAST(replace(CAST(payload AS TEXT), '"denied.test"', '"allowed.test"') AS BLOB) WHERE session_id = ? AND seq = ?`} {
		var args []any
		if strings.Contains(q, "?") {
			args = []any{s.ID[:], egressEvs[1].Seq}
		}
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rep, err = f.rt.Ledger.VerifySession(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if name, c, failed := rep.FirstFailure(); !failed || name != "chain" || c.Seq != int64(egressEvs[1].Seq) {
		t.Fatalf("verify after tampering with egress event %d: %s %+v (failed %v); want the chain check broken there", egressEvs[1].Seq, name, c, failed)
	}
}

// TestEgressRulesCompose: the policy narrows the configured network and
// can never widen it; a session that would get more than the
// configuration gives does not start, and says which entry and why.
func TestEgressRulesCompose(t *testing.T) {
	proxy := config.Network{Mode: config.NetworkProxy, AllowedDomains: []string{"pypi.org", "*.pythonhosted.org"}}
	none := config.Network{Mode: config.NetworkNone}
	pol := func(src string) *policy.Policy {
		t.Helper()
		p, err := policy.Parse("p.toml", []byte("name = \"p\"\n"+src), policy.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, c := range []struct {
		name    string
		n       config.Network
		p       *policy.Policy
		domains string // "-": no network
		err     string
	}{
		{"no policy", proxy, nil, "pypi.org,*.pythonhosted.org", ""},
		{"policy without [network]", proxy, pol(""), "pypi.org,*.pythonhosted.org", ""},
		{"narrowed", proxy, pol("[network]\nallowed_domains = [\"files.pythonhosted.org\"]\n"), "files.pythonhosted.org", ""},
		{"mode none turns it off", proxy, pol("[network]\nmode = \"none\"\n"), "-", ""},
		{"widening refused", proxy, pol("[network]\nallowed_domains = [\"pypi.org\", \"evil.test\"]\n"), "", `policy p.toml: [network] ironvise/egress: entry is not covered by ECTO_SANDBOX_ALLOWED_DOMAINS: allowed_domains entry "evil.test"`},
		{"wildcard widening refused", proxy, pol("[network]\nallowed_domains = [\"*.pypi.org\"]\n"), "", `allowed_domains entry "*.pypi.org" allows every name below pypi.org`},
		{"configured none", none, pol(""), "-", ""},
		{"configured none, policy none", none, pol("[network]\nmode = \"none\"\n"), "-", ""},
		{"configured none, policy asks for hosts", none, pol("[network]\nallowed_domains = [\"pypi.org\"]\n"), "", `ECTO_SANDBOX_NETWORK is "none"`},
		{"configured none, policy asks for proxy", none, pol("[network]\nmode = \"proxy\"\n"), "", "set ECTO_SANDBOX_NETWORK=proxy"},
		{"runtime without network", config.Network{}, pol("[network]\nmode = \"proxy\"\n"), "-", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, err := EgressRules(c.n, c.p)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v; want %q", err, c.err)
				}
				if strings.Contains(c.name, "widening") && !errors.Is(err, egress.ErrWiden) {
					t.Fatalf("err %v; want egress.ErrWiden", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := "-"
			if r != nil {
				got = strings.Join(r.Domains(), ",")
			}
			if got != c.domains {
				t.Fatalf("rules %s; want %s", got, c.domains)
			}
		})
	}
	// A session whose policy widens the list is not created.
	f := newFixture(t)
	f.rt.Network = proxy
	spec := f.spec("exec: x", nil)
	spec.Policy = pol("[network]\nallowed_domains = [\"evil.test\"]\n")
	before := f.writeCommits(t)
	if _, err := Create(context.Background(), f.rt, spec); !errors.Is(err, egress.ErrWiden) {
		t.Fatalf("Create: %v; want ErrWiden", err)
	}
	if _, err := Prepare(f.rt, spec); !errors.Is(err, egress.ErrWiden) {
		t.Fatalf("Prepare: %v; want ErrWiden", err)
	}
	if got := f.writeCommits(t); got != before {
		t.Fatalf("%d transactions committed for a session that must not start", got-before)
	}
}

// TestTripwireJudgesBySessionRules: a session's tripwire judges the
// destinations a command names by the session's own rules (the configured
// list narrowed by its policy), the ones its proxy enforces, so a host the
// policy took off the list is refused before the command runs, with the
// proxy's code; a host left on it passes the checks.
func TestTripwireJudgesBySessionRules(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.rt.Tier = &egressTier{Tier: f.rt.Tier}
	f.rt.Network = config.Network{Mode: config.NetworkProxy, AllowedDomains: []string{"allowed.test", "pypi.org"}}
	pol, err := policy.Parse("p.toml", []byte("name = \"p\"\n[network]\nallowed_domains = [\"allowed.test\"]\n"), policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		command string
		denied  verdict.Code
	}{
		{"curl -sS https://pypi.org/simple/", verdict.EgressDomainNotAllowed},
		{"curl -sS https://allowed.test/", ""},
	} {
		t.Run(c.command, func(t *testing.T) {
			spec := f.spec("exec: fetch", nil)
			spec.Policy = pol
			s, err := Create(ctx, f.rt, spec)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Step(ctx, 1, execIntent(t, "run_command", "command", c.command), agent.SourceAPI)
			if err != nil {
				t.Fatal(err)
			}
			d := res.Check.Decisive
			if c.denied == "" {
				if !res.Committed {
					t.Fatalf("a host the session allows was refused: %s %s: %s", d.Check, d.Code, d.Message)
				}
				return
			}
			if res.Committed || d.Check != verdict.CheckTripwire || d.Code != c.denied || !strings.Contains(d.Message, "pypi.org") {
				t.Fatalf("committed %v, decisive %s %s %q; want the tripwire's %s", res.Committed, d.Check, d.Code, d.Message, c.denied)
			}
		})
	}
}
