// Package mcpproxy wraps another MCP server (spoken to over stdio, as a
// client) and serves its tools on IronVise's own MCP server, checked:
//
//   - each tool definition is pinned on first sight (ToolHash, recorded in
//     the ledger under the proxy's --name); a later change withholds the
//     tool until an operator approves it (tool poisoning, rug pulls);
//   - each description (and the strings of its input schema) passes the
//     scanner: a suspected injection withholds the tool;
//   - each tools/call passes the policy's MCP tool rules and the tripwire
//     (and the policy) on its path-, URL- and command-shaped arguments, and
//     is recorded before it is forwarded;
//   - each result is scanned: credentials are replaced by placeholders and
//     suspected injections withheld before the client sees it; content
//     that cannot be scanned (images, audio, binary resources) is
//     withheld.
//
// Everything is recorded in one IronVise session per proxy run, sealed at
// exit. If the wrapped server fails, calls fail: nothing passes unchecked.
package mcpproxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/policy"
	"github.com/ironvise/ironvise/internal/redact"
	"github.com/ironvise/ironvise/internal/sandbox"
	"github.com/ironvise/ironvise/internal/scan"
	"github.com/ironvise/ironvise/internal/tripwire"
	"github.com/ironvise/ironvise/internal/verdict"
)

// Event types of a proxy session besides EventPin.
const (
	// EventCall records a tools/call and the verdicts on it, before it is
	// forwarded.
	EventCall = "mcp_tool_call"
	// EventResult records what the wrapped server returned, scanned and
	// redacted, or why nothing was returned.
	EventResult = "mcp_tool_result"
)

// Actor is who seals a proxy session.
const Actor = "operator:mcp-proxy"

// maxRecorded caps the text of one recorded field (arguments, a
// definition); the hashes commit to the whole.
const maxRecorded = 16 << 10

// Options configure Open.
type Options struct {
	// Name is the wrapped server's name (--name): pins and MCP tool rules
	// are keyed by it.
	Name string
	// Command starts the wrapped server; it speaks MCP on its stdin and
	// stdout.
	Command *exec.Cmd
	// Transport, when set, replaces Command (tests).
	Transport mcp.Transport
	Ledger    *ledger.Ledger
	Scanner   *scan.Scanner
	Tripwire  *tripwire.Tripwire
	// Policy is nil when none is loaded.
	Policy  *policy.Policy
	Version string
	Logger  *slog.Logger
}

// Proxy is one run of the proxy: the wrapped server's client session, the
// server offered to the client, and the IronVise session recording both.
type Proxy struct {
	// Server is what the client connects to.
	Server *mcp.Server
	// ID is the IronVise session.
	ID uuid.UUID

	o   Options
	red *redact.Redactor
	log *slog.Logger
	up  *mcp.ClientSession

	// syncMu serialises listings of the wrapped server's tools.
	syncMu sync.Mutex
	// mu guards the fields below.
	mu      sync.Mutex
	pins    map[string]PinEvent
	offered map[string]string // tool name → hash offered to the client
	step    int
	upErr   error // why the wrapped server is gone; nil while it runs

	closeOnce sync.Once
	closeErr  error
}

// Open records a new session, starts the wrapped server, pins and checks
// its tools and returns the proxy. The caller serves p.Server to the
// client and must Close the proxy afterwards (which stops the wrapped
// server and seals the session).
func Open(ctx context.Context, o Options) (*Proxy, error) {
	if o.Name == "" || strings.ContainsAny(o.Name, "\x00\n\r") {
		return nil, errors.New("mcp proxy: --name must be a non-empty single-line name (pins and policy rules are keyed by it)")
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	prior, err := LoadPins(ctx, o.Ledger, o.Name)
	if err != nil {
		return nil, err
	}
	spec := ledger.SessionSpec{Goal: Goal(o.Name), TripwireHash: o.Tripwire.Config().SHA256, SandboxTier: string(sandbox.TierNone)}
	if o.Policy != nil {
		spec.PolicyHash = o.Policy.SHA256()
	}
	s, err := o.Ledger.CreateSession(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("mcp proxy: create session: %w", err)
	}
	p := &Proxy{ID: s.ID, o: o, red: redact.ForSession(s.ID.String()), log: log.With("session", s.ID.String()),
		pins: prior.Pins, offered: map[string]string{}}
	p.Server = mcp.NewServer(&mcp.Implementation{Name: "ironvise-proxy-" + o.Name, Version: o.Version}, &mcp.ServerOptions{
		// Tools are offered even while none passed (yet): a tool added or
		// approved later appears with a list-changed notification.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		Instructions: fmt.Sprintf("The tools of MCP server %q, checked by IronVise and recorded in session %s. A tool whose definition changed since it was pinned, or whose description looks like a prompt injection, is not offered.",
			o.Name, s.ID),
	})
	// A call of a tool that is not offered (withheld, or never listed)
	// goes through the same checks and record as any other, and is denied
	// there: the attempt is evidence, and the client gets a tool error
	// that says why, not a bare protocol error.
	p.Server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if ctr, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && ctr.Params != nil && !p.isOffered(ctr.Params.Name) {
				return p.call(ctx, ctr)
			}
			return next(ctx, method, req)
		}
	})
	t := o.Transport
	if t == nil {
		t = &mcp.CommandTransport{Command: o.Command, TerminateDuration: 2 * time.Second}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ironvise-proxy", Version: o.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(ctx context.Context, _ *mcp.ToolListChangedRequest) {
			// A definition may change mid-run: it is pinned and checked
			// again before the client sees it.
			go func() {
				p.mu.Lock()
				started := p.up != nil
				p.mu.Unlock()
				if !started {
					return // Open lists the tools once connected
				}
				if err := p.sync(context.WithoutCancel(ctx)); err != nil {
					p.log.Warn("mcp proxy: re-list the wrapped server's tools", "err", err)
				}
			}()
		},
	})
	up, err := client.Connect(ctx, t, nil)
	if err != nil {
		err = fmt.Errorf("mcp proxy: start and initialise the wrapped server %q: %w", o.Name, err)
		return nil, p.abort(ctx, err)
	}
	p.mu.Lock()
	p.up = up
	p.mu.Unlock()
	go func() {
		werr := up.Wait()
		p.mu.Lock()
		if p.upErr == nil {
			p.upErr = fmt.Errorf("the wrapped server %q exited (%v)", o.Name, werr)
		}
		p.mu.Unlock()
	}()
	if err := p.sync(ctx); err != nil {
		up.Close()
		return nil, p.abort(ctx, err)
	}
	return p, nil
}

// abort ends and seals the session of a proxy that could not start, and
// returns err (joined with any failure to record that).
func (p *Proxy) abort(ctx context.Context, err error) error {
	if _, rerr := p.o.Ledger.Append(context.WithoutCancel(ctx), p.ID, EventResult, map[string]any{"step": 0, "error": p.red.String(err.Error())}); rerr != nil {
		err = errors.Join(err, rerr)
	}
	return errors.Join(err, p.end(ctx, ledger.StatusFailed))
}

// end records the session's end and seals it.
func (p *Proxy) end(ctx context.Context, status ledger.Status) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if err := p.o.Ledger.EndSession(ctx, p.ID, status); err != nil && !errors.Is(err, ledger.ErrNotRunning) {
		return fmt.Errorf("mcp proxy: end session %s: %w", p.ID, err)
	}
	if _, err := p.o.Ledger.Seal(ctx, p.ID, Actor); err != nil && !errors.Is(err, ledger.ErrSealed) {
		return fmt.Errorf("mcp proxy: seal session %s: %w", p.ID, err)
	}
	return nil
}

// Close stops the wrapped server, then ends and seals the session
// (failed when the wrapped server had died). Safe to call more than once.
func (p *Proxy) Close(ctx context.Context) error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		status := ledger.StatusCompleted
		if p.upErr != nil {
			status = ledger.StatusFailed
		}
		p.upErr = errors.New("the proxy is closing")
		p.mu.Unlock()
		if p.up != nil {
			p.up.Close()
		}
		p.closeErr = p.end(ctx, status)
	})
	return p.closeErr
}

// sync lists the wrapped server's tools, pins and checks each, records the
// pin table and offers the client exactly the tools that passed. If the
// table cannot be recorded, nothing changes in what is offered.
func (p *Proxy) sync(ctx context.Context) error {
	p.syncMu.Lock()
	defer p.syncMu.Unlock()
	p.mu.Lock()
	up := p.up
	p.mu.Unlock()
	var tools []*mcp.Tool
	for t, err := range up.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp proxy: list the tools of %q: %w", p.o.Name, err)
		}
		tools = append(tools, t)
	}
	p.mu.Lock()
	prior := p.pins
	p.mu.Unlock()
	next := map[string]PinEvent{}
	byName := map[string]*mcp.Tool{}
	for _, t := range tools {
		if _, dup := byName[t.Name]; dup {
			// Two definitions under one name: which one would run is the
			// server's choice, so neither is offered.
			ev := next[t.Name]
			ev.Withheld, ev.Reason = true, "the server lists two tools with this name"
			next[t.Name] = ev
			continue
		}
		byName[t.Name] = t
		next[t.Name] = p.judge(t, prior[t.Name])
	}
	var names []string
	for n := range next {
		names = append(names, n)
	}
	for n, prev := range prior {
		if _, ok := next[n]; !ok {
			next[n] = PinEvent{Server: p.o.Name, Tool: n, Pinned: prev.Pinned, Status: PinAbsent}
			names = append(names, n)
		}
	}
	sort.Strings(names)
	recs := make([]ledger.Record, 0, len(names))
	for _, n := range names {
		recs = append(recs, ledger.Record{Type: EventPin, Payload: next[n]})
	}
	if len(recs) > 0 {
		if _, err := p.o.Ledger.AppendBatch(ctx, p.ID, recs); err != nil {
			return fmt.Errorf("mcp proxy: record the tool pins: %w", err)
		}
	}
	p.mu.Lock()
	p.pins = next
	p.mu.Unlock()
	var remove []string
	for _, n := range names {
		ev := next[n]
		t := byName[n]
		switch {
		case ev.Withheld || t == nil:
			if _, ok := p.offered[n]; ok {
				remove = append(remove, n)
				delete(p.offered, n)
			}
			if ev.Withheld {
				p.log.Warn("mcp proxy: tool withheld", "server", p.o.Name, "tool", n, "reason", ev.Reason)
			}
		case p.offered[n] != ev.SHA256:
			if err := p.offer(t); err != nil {
				p.log.Warn("mcp proxy: tool not offered", "server", p.o.Name, "tool", n, "err", err)
				continue
			}
			p.offered[n] = ev.SHA256
		}
	}
	if len(remove) > 0 {
		p.Server.RemoveTools(remove...)
	}
	return nil
}

// judge pins tool t against its earlier pin and scans its description.
func (p *Proxy) judge(t *mcp.Tool, prev PinEvent) PinEvent {
	ev := PinEvent{Server: p.o.Name, Tool: t.Name}
	h, err := ToolHash(t)
	if err != nil {
		ev.Withheld, ev.Reason, ev.Status, ev.Pinned = true, err.Error(), PinChanged, prev.Pinned
		return ev
	}
	ev.SHA256 = h
	if def, err := json.Marshal(t); err == nil {
		ev.Definition = capText(p.red.String(string(def)))
	}
	switch {
	case prev.Pinned == "":
		ev.Status, ev.Pinned = PinFirstSeen, h
	case prev.Pinned == h:
		ev.Status, ev.Pinned = PinMatch, h
	default:
		ev.Status, ev.Pinned, ev.Withheld = PinChanged, prev.Pinned, true
		ev.Reason = fmt.Sprintf("the definition changed since it was pinned (pinned sha256 %.12s…, now %.12s…): withheld until approved with `ironvise mcp pins approve --name %s %s`", prev.Pinned, h, p.o.Name, t.Name)
	}
	sr := p.o.Scanner.ScanWith(definitionText(t), p.red)
	if sr.Suspicious {
		ev.Labels = sr.Labels
		why := "its description looks like a prompt injection (" + strings.Join(sr.Labels, ", ") + ")"
		if ev.Withheld {
			ev.Reason += "; " + why
		} else {
			ev.Withheld, ev.Reason = true, why
		}
		if ev.Status == PinFirstSeen {
			// A poisoned definition is never accepted as the pin.
			ev.Pinned = ""
		}
	}
	return ev
}

// definitionText is what the scanner reads of a tool: its title, its
// description and every string of its input schema (property
// descriptions, titles, enum values), where an injection can hide as well.
func definitionText(t *mcp.Tool) string {
	parts := []string{t.Title, t.Description}
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if depth > 32 {
			return
		}
		switch x := v.(type) {
		case string:
			parts = append(parts, x)
		case []any:
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], depth+1)
			}
		}
	}
	var schema any
	if b, err := json.Marshal(t.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema)
	}
	walk(schema, 0)
	return strings.Join(parts, "\n")
}

// isOffered reports whether the client may call tool name: its pin is
// accepted and it is not withheld.
func (p *Proxy) isOffered(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	pin, ok := p.pins[name]
	return ok && !pin.Withheld && pin.Pinned != "" && pin.Status != PinAbsent
}

// offer adds t to the tools the client sees, with the wrapped server's own
// definition. The SDK refuses (panics on) a definition it cannot serve —
// an input schema that is not an object — so such a tool is not offered.
func (p *Proxy) offer(t *mcp.Tool) (err error) {
	var m map[string]any
	b, merr := json.Marshal(t.InputSchema)
	if merr != nil || json.Unmarshal(b, &m) != nil || m["type"] != "object" {
		return fmt.Errorf("tool %q: its input schema is not a JSON object schema", t.Name)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("tool %q: %v", t.Name, r)
		}
	}()
	c := *t
	p.Server.AddTool(&c, p.call)
	return nil
}

func capText(s string) string { return scan.CutText(s, maxRecorded) }

// verdictRecord is one verdict on a call as recorded.
type verdictRecord struct {
	Check    verdict.Check    `json:"check"`
	Decision verdict.Decision `json:"decision"`
	Code     verdict.Code     `json:"code"`
	Message  string           `json:"message"`
	Rule     string           `json:"rule,omitempty"`
	Argument string           `json:"argument,omitempty"`
}

// callEvent is the payload of a mcp_tool_call event.
type callEvent struct {
	Step   int    `json:"step"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Pinned is the hash of the definition the call was made against.
	Pinned string `json:"pinned_sha256"`
	// Arguments are the call's arguments as JSON, credentials redacted;
	// ArgumentsSHA256 commits to them as received.
	Arguments       string          `json:"arguments"`
	ArgumentsSHA256 string          `json:"arguments_sha256"`
	Verdicts        []verdictRecord `json:"verdicts"`
	// Decision is allow (the call is forwarded) or deny.
	Decision verdict.Decision `json:"decision"`
}

// resultEvent is the payload of a mcp_tool_result event.
type resultEvent struct {
	Step int    `json:"step"`
	Tool string `json:"tool"`
	// Error says why no result came back (the wrapped server failed).
	Error   string `json:"error,omitempty"`
	IsError bool   `json:"is_error"`
	// Contents are the text parts of the result as recorded: credentials
	// replaced by placeholders, injection attempts kept as evidence, with
	// the scanner's spans.
	Contents   []scannedText `json:"contents"`
	Withheld   []string      `json:"withheld,omitempty"`
	Suspicious bool          `json:"suspicious"`
	Labels     []string      `json:"labels"`
	Secrets    int           `json:"secrets"`
}

type scannedText struct {
	Content   string      `json:"content"`
	Spans     []scan.Span `json:"spans"`
	RawSHA256 string      `json:"raw_sha256"`
}
