package webhook

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ironvise/ironvise/internal/ledger"
	"github.com/ironvise/ironvise/internal/redact"
)

// SIEM formats (SIEM_FORMAT, a webhook's siem_format).
const (
	FormatJSON = "json"
	FormatCEF  = "cef"
	FormatLEEF = "leef"
)

// ValidFormat reports whether f is json, cef or leef.
func ValidFormat(f string) bool { return f == FormatJSON || f == FormatCEF || f == FormatLEEF }

const (
	vendor  = "IronVise"
	product = "IronVise"
	// maxMsg bounds the free-text field of CEF and LEEF lines (ArcSight's
	// msg holds 1023 characters).
	maxMsg = 1023
)

// Message is one notification, built once per event and rendered per
// format. Every text field comes from the redacted payload.
type Message struct {
	Kind        string          `json:"kind"`
	Product     string          `json:"product"`
	Version     string          `json:"version"`
	Severity    int             `json:"severity"`
	ID          int64           `json:"id"`
	SessionID   *string         `json:"session_id"`
	Sequence    uint64          `json:"sequence"`
	Type        string          `json:"type"`
	ContentHash string          `json:"content_hash"`
	CreatedAt   string          `json:"created_at"`
	Payload     json.RawMessage `json:"payload"`
	Redacted    bool            `json:"redacted"`

	created time.Time
	// Fields of the payload that CEF and LEEF name.
	check, code, rule, message, status, tier, reason string
}

// NewMessage builds the notification of a committed event of kind. The
// payload is redacted by redact.Payload, the redaction of the event stream
// too: webhooks carry redacted content only (docs/design/ledger.md), and a
// payload that cannot be read travels as a placeholder, never as it is. Ids,
// hashes and times travel beside the payload untouched, so a SIEM entry can
// still be traced to the ledger event, whose stored bytes are intact.
func NewMessage(kind string, ev *ledger.Event, version string) *Message {
	payload, changed := redact.Payload(ev.Payload)
	m := &Message{
		Kind: kind, Product: product, Version: version, Severity: severity(kind), ID: ev.ID(), Sequence: ev.Seq,
		Type: ev.Type, ContentHash: ev.Hash.String(), CreatedAt: ev.CreatedAt().Format(ledger.TimeFormat),
		Payload: payload, Redacted: changed, created: ev.CreatedAt(),
	}
	if ev.SessionID != ledger.InstanceSessionID {
		id := ev.SessionID.String()
		m.SessionID = &id
	}
	var p struct {
		Check   string `json:"check"`
		Code    string `json:"code"`
		Rule    string `json:"rule"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Tier    string `json:"tier"`
		Reason  string `json:"reason"`
		Content string `json:"content"`
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Size    int64  `json:"tree_size"`
		Root    string `json:"root_hash"`
	}
	_ = json.Unmarshal(payload, &p)
	m.check, m.code, m.rule, m.status, m.tier, m.reason = p.Check, p.Code, p.Rule, p.Status, p.Tier, p.Reason
	switch kind {
	case KindObservation:
		m.message = p.Content
	case KindSandboxAborted:
		m.message = p.Reason
	case KindEgressDenial:
		m.check = string(ledger.TypeEgress)
		m.message = fmt.Sprintf("egress refused: %s:%d: %s", p.Host, p.Port, p.Reason)
	case KindSessionAborted:
		m.message = "session ended " + p.Status
	case KindCheckpoint:
		m.message = fmt.Sprintf("checkpoint %d root %s", p.Size, p.Root)
	default:
		m.message = p.Message
	}
	return m
}

// title is the one-line name of the notification.
func (m *Message) title() string {
	switch m.Kind {
	case KindGuardDenial, KindTripwireRejection, KindPolicyDenial:
		return "IronVise " + m.check + " denial " + m.code
	case KindEgressDenial:
		return "IronVise egress denial " + m.code
	case KindSandboxAborted:
		return "IronVise sandbox aborted"
	case KindSessionAborted:
		return "IronVise session aborted"
	case KindCheckpoint:
		return "IronVise checkpoint"
	}
	return "IronVise observation"
}

// Render returns the body and its content type in format f.
func (m *Message) Render(f string) ([]byte, string, error) {
	switch f {
	case FormatJSON:
		b, err := json.Marshal(m)
		if err != nil {
			return nil, "", fmt.Errorf("webhook: encode json: %w", err)
		}
		return b, "application/json", nil
	case FormatCEF:
		return []byte(m.cef()), "text/plain; charset=utf-8", nil
	case FormatLEEF:
		return []byte(m.leef()), "text/plain; charset=utf-8", nil
	}
	return nil, "", fmt.Errorf("webhook: unknown format %q (accepted: json, cef, leef)", f)
}

// cefHeader escapes a CEF header field: backslash and pipe are escaped;
// a header is one line, so line breaks become spaces.
func cefHeader(s string) string {
	return strings.NewReplacer(`\`, `\\`, `|`, `\|`, "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// cefValue escapes a CEF extension value: backslash, equals sign and line
// breaks (as \n and \r).
func cefValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `=`, `\=`, "\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(s)
}

// leefValue escapes a LEEF attribute value: backslash, equals sign, the
// tab delimiter and line breaks.
func leefValue(s string) string {
	return strings.NewReplacer(`\`, `\\`, `=`, `\=`, "\t", `\t`, "\r\n", `\n`, "\n", `\n`, "\r", `\r`).Replace(s)
}

func truncate(s string) string {
	if len(s) <= maxMsg {
		return s
	}
	cut := maxMsg
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// fields lists the attributes LEEF carries, in order.
func (m *Message) fields() [][2]string {
	f := [][2]string{{"externalId", strconv.FormatInt(m.ID, 10)}}
	if m.SessionID != nil {
		f = append(f, [2]string{"sessionId", *m.SessionID})
	}
	f = append(f, [2]string{"sequence", strconv.FormatUint(m.Sequence, 10)}, [2]string{"eventType", m.Type}, [2]string{"contentHash", m.ContentHash})
	for _, kv := range [][2]string{{"check", m.check}, {"code", m.code}, {"rule", m.rule}, {"status", m.status}, {"tier", m.tier}} {
		if kv[1] != "" {
			f = append(f, kv)
		}
	}
	return append(f, [2]string{"msg", truncate(m.message)})
}

// cef renders ArcSight CEF:0. The device event class id is the kind;
// IronVise's own fields use the csN/cnN label pairs CEF reserves for
// vendor data.
func (m *Message) cef() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CEF:0|%s|%s|%s|%s|%s|%d|", cefHeader(vendor), cefHeader(product), cefHeader(m.Version), cefHeader(m.Kind), cefHeader(m.title()), m.Severity)
	ext := [][2]string{{"rt", strconv.FormatInt(m.created.UnixMilli(), 10)}, {"cat", m.Kind}, {"externalId", strconv.FormatInt(m.ID, 10)}}
	if m.SessionID != nil {
		ext = append(ext, [2]string{"cs1Label", "sessionId"}, [2]string{"cs1", *m.SessionID})
	}
	ext = append(ext,
		[2]string{"cn1Label", "sequence"}, [2]string{"cn1", strconv.FormatUint(m.Sequence, 10)},
		[2]string{"cs2Label", "contentHash"}, [2]string{"cs2", m.ContentHash},
		[2]string{"cs6Label", "eventType"}, [2]string{"cs6", m.Type})
	for _, c := range [][3]string{{"cs3", "check", m.check}, {"cs4", "code", m.code}, {"cs5", "rule", m.rule}} {
		if c[2] != "" {
			ext = append(ext, [2]string{c[0] + "Label", c[1]}, [2]string{c[0], c[2]})
		}
	}
	if m.status != "" {
		ext = append(ext, [2]string{"outcome", m.status})
	}
	msg := m.message
	if m.tier != "" {
		msg += " (tier " + m.tier + ")"
	}
	ext = append(ext, [2]string{"msg", truncate(msg)})
	for i, kv := range ext {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(kv[0] + "=" + cefValue(kv[1]))
	}
	return b.String()
}

// leef renders IBM LEEF 2.0 with a tab delimiter (declared as x09).
func (m *Message) leef() string {
	var b strings.Builder
	fmt.Fprintf(&b, "LEEF:2.0|%s|%s|%s|%s|x09|", cefHeader(vendor), cefHeader(product), cefHeader(m.Version), cefHeader(m.Kind))
	attrs := [][2]string{
		{"devTime", m.created.UTC().Format("2006-01-02T15:04:05.000Z07:00")},
		{"devTimeFormat", "yyyy-MM-dd'T'HH:mm:ss.SSSX"},
		{"cat", m.Kind}, {"sev", strconv.Itoa(max(1, m.Severity))}, {"name", m.title()},
	}
	attrs = append(attrs, m.fields()...)
	for i, kv := range attrs {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(kv[0] + "=" + leefValue(kv[1]))
	}
	return b.String()
}
