package evidence

import (
	"encoding/json"
	"strconv"

	"github.com/ironvise/ironvise/internal/ledger"
)

// EgressConnection is one connection a command opened through the egress
// proxy (an egress event), as reports list it.
type EgressConnection struct {
	Sequence   uint64 `json:"sequence"`
	Step       int    `json:"step"`
	Protocol   string `json:"protocol"`
	Host       string `json:"host"`
	Port       int    `json:"port"`
	SNI        string `json:"sni,omitempty"`
	Addr       string `json:"addr,omitempty"`
	BytesUp    int64  `json:"bytes_up"`
	BytesDown  int64  `json:"bytes_down"`
	DurationMS int64  `json:"duration_ms"`
	Verdict    string `json:"verdict"`
	Code       string `json:"code"`
	Rule       string `json:"rule,omitempty"`
	Reason     string `json:"reason"`
}

// egressConnections lists a chain's egress events in ledger order. Only
// IronVise writes them (the API refuses the type from a client); an event
// that says otherwise is left out, as a client's words are everywhere in a
// report.
func egressConnections(evs []ledger.Event) []EgressConnection {
	var out []EgressConnection
	for i := range evs {
		ev := &evs[i]
		if ev.Type != ledger.TypeEgress || ledger.EventOrigin(ev.Payload) == ledger.OriginClient {
			continue
		}
		c := EgressConnection{Sequence: ev.Seq}
		if json.Unmarshal(ev.Payload, &c) != nil {
			continue
		}
		c.Sequence = ev.Seq
		out = append(out, c)
	}
	return out
}

// Target is host:port.
func (c EgressConnection) Target() string {
	h := c.Host
	if h == "" {
		h = "-"
	}
	return h + ":" + strconv.Itoa(c.Port)
}

// egress writes the network connections of the session's commands, when
// there are any.
func (h *htmlWriter) egress(cs []EgressConnection) {
	if len(cs) == 0 {
		return
	}
	denied := 0
	for _, c := range cs {
		if c.Verdict == "deny" {
			denied++
		}
	}
	h.raw("<h2>Network egress</h2>\n<p class=\"muted\">")
	h.text(strconv.Itoa(len(cs)) + " connection(s) through the egress proxy, " + strconv.Itoa(denied) + " refused.")
	h.raw("</p>\n<table>\n<tr><th>Seq</th><th>Step</th><th>Host</th><th>Verdict</th><th>Bytes up</th><th>Bytes down</th><th>Time</th><th>Rule or reason</th></tr>\n")
	for _, c := range cs {
		class, why := "ok", c.Rule
		if c.Verdict != "allow" {
			class, why = "fail", c.Code+": "+c.Reason
		}
		h.cells(
			cell{strconv.FormatUint(c.Sequence, 10), ""},
			cell{strconv.Itoa(c.Step), ""},
			cell{c.Target(), "mono"},
			cell{c.Verdict, class},
			cell{strconv.FormatInt(c.BytesUp, 10), ""},
			cell{strconv.FormatInt(c.BytesDown, 10), ""},
			cell{strconv.FormatInt(c.DurationMS, 10) + " ms", ""},
			cell{why, "pre"},
		)
	}
	h.raw("</table>\n")
}
