package config

import (
	"math"
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// Server configures `ironvise serve` (docs/design/api.md#server-config): the
// listener, the bootstrapped tokens, the rate limits, the SSE keep-alive,
// proxies, CORS and the demo switch.
type Server struct {
	// BindHost and BindPort are ECTO_BIND_HOST (default 127.0.0.1) and
	// ECTO_BIND_PORT (default 3000; 0 lets the OS choose).
	BindHost string
	BindPort int
	// ObserverToken is OBSERVER_TOKEN: the bootstrapped admin token, or
	// unset for a generated one-run token. AuditorToken and AgentToken are
	// ECTOLEDGER_AUDITOR_TOKEN and ECTOLEDGER_AGENT_TOKEN. All three are
	// taken verbatim (trimming would change the token a client sends).
	ObserverToken Secret
	AuditorToken  Secret
	AgentToken    Secret
	// The three token-bucket limiters (docs/design/api.md#rate-limits): refill
	// per second and capacity.
	APIRate, APIBurst         int
	SessionRate, SessionBurst int
	SSERate, SSEBurst         int
	// SSEKeepAliveSecs is SSE_KEEPALIVE_SECS: the idle interval after which
	// a stream gets a keep-alive comment.
	SSEKeepAliveSecs int
	// TrustedProxies is ECTO_TRUSTED_PROXIES: peers allowed to name the
	// client in X-Forwarded-For.
	TrustedProxies []netip.Prefix
	// CORSOrigins is ECTO_CORS_ORIGINS: nil means every origin ("*"),
	// otherwise the exact origins allowed.
	CORSOrigins []string
	// DemoMode is ECTO_DEMO_MODE (1/true): enables the demo reset.
	DemoMode bool
	// MaxConnections is ECTO_MAX_CONNECTIONS: open client connections
	// across all peers, event streams included; one more is answered 503
	// with Retry-After and closed. 0 (the default) derives it from the
	// open-file limit, keeping room below it for the database, the guard
	// workers and the sandbox (internal/server fdlimit.go).
	MaxConnections int
	// MaxConnectionsPerIP is ECTO_MAX_CONNECTIONS_PER_IP (default 512):
	// open connections of one client address; one more is answered 429.
	// Trusted proxies (ECTO_TRUSTED_PROXIES) are counted only globally.
	MaxConnectionsPerIP int
	// IdleTimeoutSecs is ECTO_IDLE_TIMEOUT_SECS (default 15): how long a
	// keep-alive connection may wait for its next request.
	IdleTimeoutSecs int
	// BodyTimeoutSecs is ECTO_BODY_TIMEOUT_SECS (default 30): how long a
	// request body may take to arrive in full.
	BodyTimeoutSecs int
	// MaxIdleSessions is ECTO_MAX_IDLE_SESSIONS (default 1000): API
	// sessions (agent_loop false) that may be running at once on this
	// instance; MaxIdleSessionsPerToken is ECTO_MAX_IDLE_SESSIONS_PER_TOKEN
	// (default 100), the same per token. Both are answered 429.
	MaxIdleSessions         int
	MaxIdleSessionsPerToken int
	// SessionIdleSecs is ECTO_SESSION_IDLE_SECS (default 300): an API
	// session that received no intent for this long drops its in-memory
	// state (its guard worker, caches); the next intent rebuilds it from
	// the ledger.
	SessionIdleSecs int
	// EVMRPCURL and EVMContractAddress are only reflected (evm_enabled is
	// false in this milestone). The RPC URL often embeds a provider key,
	// so it is a Secret.
	EVMRPCURL          Secret
	EVMContractAddress string
}

// Defaults of the serve variables (docs/design/api.md#server-config).
const (
	DefaultBindHost         = "127.0.0.1"
	DefaultBindPort         = 3000
	DefaultAPIRate          = 60
	DefaultAPIBurst         = 120
	DefaultSessionRate      = 2
	DefaultSessionBurst     = 5
	DefaultSSERate          = 4
	DefaultSSEBurst         = 10
	DefaultSSEKeepAliveSecs = 15

	DefaultMaxConnectionsPerIP     = 512
	DefaultIdleTimeoutSecs         = 15
	DefaultBodyTimeoutSecs         = 30
	DefaultMaxIdleSessions         = 1000
	DefaultMaxIdleSessionsPerToken = 100
	DefaultSessionIdleSecs         = 300
)

func loadServer(r *reader) Server {
	s := Server{BindHost: DefaultBindHost}
	if v, ok := r.get("ECTO_BIND_HOST"); ok {
		if h, ok := bindHost(v); ok {
			s.BindHost = h
		} else {
			r.fail("ECTO_BIND_HOST", v, "not an IP address or host name", "an IP address such as 127.0.0.1, ::1 or 0.0.0.0, or a host name such as localhost")
		}
	}
	s.BindPort, _ = r.intRange("ECTO_BIND_PORT", DefaultBindPort, 0, 65535)
	s.ObserverToken = r.token("OBSERVER_TOKEN")
	s.AuditorToken = r.token("ECTOLEDGER_AUDITOR_TOKEN")
	s.AgentToken = r.token("ECTOLEDGER_AGENT_TOKEN")
	// Rate limits and the keep-alive must be positive integers
	// (docs/design/api.md#server-config); zero would silently disable a limiter
	// or flood streams.
	const most = math.MaxInt32
	s.APIRate, _ = r.intRange("API_RATE_LIMIT_PER_SECOND", DefaultAPIRate, 1, most)
	s.APIBurst, _ = r.intRange("API_RATE_LIMIT_BURST", DefaultAPIBurst, 1, most)
	s.SessionRate, _ = r.intRange("SESSION_RATE_LIMIT_PER_SECOND", DefaultSessionRate, 1, most)
	s.SessionBurst, _ = r.intRange("SESSION_RATE_LIMIT_BURST", DefaultSessionBurst, 1, most)
	s.SSERate, _ = r.intRange("SSE_RATE_LIMIT_PER_SECOND", DefaultSSERate, 1, most)
	s.SSEBurst, _ = r.intRange("SSE_RATE_LIMIT_BURST", DefaultSSEBurst, 1, most)
	s.SSEKeepAliveSecs, _ = r.intRange("SSE_KEEPALIVE_SECS", DefaultSSEKeepAliveSecs, 1, 86400)
	// Connection and memory limits (issue 13): each one bounds what a
	// client can hold open; zero would disable the bound.
	s.MaxConnections, _ = r.intRange("ECTO_MAX_CONNECTIONS", 0, 0, most)
	s.MaxConnectionsPerIP, _ = r.intRange("ECTO_MAX_CONNECTIONS_PER_IP", DefaultMaxConnectionsPerIP, 1, most)
	s.IdleTimeoutSecs, _ = r.intRange("ECTO_IDLE_TIMEOUT_SECS", DefaultIdleTimeoutSecs, 1, 3600)
	s.BodyTimeoutSecs, _ = r.intRange("ECTO_BODY_TIMEOUT_SECS", DefaultBodyTimeoutSecs, 1, 3600)
	s.MaxIdleSessions, _ = r.intRange("ECTO_MAX_IDLE_SESSIONS", DefaultMaxIdleSessions, 1, most)
	s.MaxIdleSessionsPerToken, _ = r.intRange("ECTO_MAX_IDLE_SESSIONS_PER_TOKEN", DefaultMaxIdleSessionsPerToken, 1, most)
	s.SessionIdleSecs, _ = r.intRange("ECTO_SESSION_IDLE_SECS", DefaultSessionIdleSecs, 1, 86400)
	if v, ok := r.get("ECTO_TRUSTED_PROXIES"); ok {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p == "" {
				continue
			}
			pfx, err := parsePrefix(p)
			if err != nil {
				r.fail("ECTO_TRUSTED_PROXIES", p, "not a CIDR or IP address", "a comma list of CIDRs such as 10.0.0.0/8, ::1/128")
				continue
			}
			s.TrustedProxies = append(s.TrustedProxies, pfx)
		}
	}
	if v, ok := r.get("ECTO_CORS_ORIGINS"); ok && v != "*" {
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o == "" {
				continue
			}
			if o == "*" {
				r.fail("ECTO_CORS_ORIGINS", v, "\"*\" cannot be combined with origins", "* alone, or a comma list of origins such as https://ops.example.com")
				continue
			}
			if !validOrigin(o) {
				r.fail("ECTO_CORS_ORIGINS", o, "not an origin", "scheme://host[:port] in lower case, without path, such as https://ops.example.com")
				continue
			}
			s.CORSOrigins = append(s.CORSOrigins, o)
		}
		if len(s.CORSOrigins) == 0 {
			r.fail("ECTO_CORS_ORIGINS", v, "lists no origin", "*, or a comma list of origins")
		}
	}
	s.DemoMode = r.switchVar("ECTO_DEMO_MODE", false, wordsDemo)
	if v, ok := r.get("EVM_RPC_URL"); ok {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			// The URL may carry a provider key, so it is not echoed.
			r.fail("EVM_RPC_URL", "", "not an http(s) or ws(s) URL", "an RPC endpoint URL such as https://rpc.example.org")
		} else {
			s.EVMRPCURL = NewSecret(v)
		}
	}
	if v, ok := r.get("EVM_CONTRACT_ADDRESS"); ok {
		if len(v) != 42 || !strings.HasPrefix(v, "0x") || !isHex(v[2:]) {
			r.fail("EVM_CONTRACT_ADDRESS", v, "not a contract address", "0x followed by 40 hex digits")
		} else {
			s.EVMContractAddress = v
		}
	}
	return s
}

// token reads a bootstrap token verbatim; an empty value counts as unset.
func (r *reader) token(name string) Secret {
	v, ok := r.look(name)
	if !ok || v == "" {
		return Secret{}
	}
	return NewSecret(v)
}

// bindHost accepts an IP literal (brackets allowed around IPv6) or a DNS
// host name, returned without brackets.
func bindHost(v string) (string, bool) {
	v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
	if ip, err := netip.ParseAddr(v); err == nil {
		if ip.Zone() != "" {
			return "", false
		}
		return ip.String(), true
	}
	if len(v) > 253 || strings.Trim(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != "" {
		return "", false
	}
	for _, label := range strings.Split(v, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return "", false
		}
	}
	return strings.ToLower(v), true
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// validOrigin accepts the serialisation browsers send in Origin:
// scheme "://" host [":" port], lower case, nothing else.
func validOrigin(o string) bool {
	u, err := url.Parse(o)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return false
	}
	if o != strings.ToLower(o) || strings.HasSuffix(o, ":") {
		return false
	}
	if p := u.Port(); p != "" {
		if _, _, err := net.SplitHostPort(u.Host); err != nil {
			return false
		}
	}
	return u.Scheme+"://"+u.Host == o
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
