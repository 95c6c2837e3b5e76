package egress

import (
	"time"

	"github.com/ironvise/ironvise/internal/verdict"
)

// Protocols of a Record.
const (
	ProtoHTTP    = "http"
	ProtoConnect = "connect"
	ProtoSOCKS5  = "socks5"
)

// Record describes one connection through the proxy, allowed or refused.
// It is the payload of an egress ledger event.
type Record struct {
	Protocol string `json:"protocol"`
	Client   string `json:"client,omitempty"`
	Host     string `json:"host,omitempty"`
	Port     uint16 `json:"port,omitempty"`
	SNI      string `json:"sni,omitempty"`
	// Addr is the address dialled (the one connected to), empty when no
	// connection was made.
	Addr      string    `json:"addr,omitempty"`
	BytesUp   int64     `json:"bytes_up"`
	BytesDown int64     `json:"bytes_down"`
	Start     time.Time `json:"start"`
	// DurationMS is from accepting the client to closing both sides.
	DurationMS int64 `json:"duration_ms"`
	// Verdict is allow or deny; a connection allowed and later cut by a
	// cap is a deny with the cap's code.
	Verdict verdict.Decision `json:"verdict"`
	Code    verdict.Code     `json:"code"`
	// Rule is the list entry or address rule that allowed the connection
	// ("api.example.com", "*.example.com", "public", "cidr:10.0.0.0/8").
	Rule string `json:"rule,omitempty"`
	// Reason is the one-line explanation (the verdict message).
	Reason string `json:"reason"`
}
