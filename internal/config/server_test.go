package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestServerSection(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want func(Server) error
		bad  string // variable named by the error
	}{
		{"defaults", map[string]string{}, func(s Server) error {
			if s.BindHost != "127.0.0.1" || s.BindPort != 3000 || s.ObserverToken.Set() || s.APIRate != 60 || s.APIBurst != 120 ||
				s.SessionRate != 2 || s.SessionBurst != 5 || s.SSERate != 4 || s.SSEBurst != 10 || s.SSEKeepAliveSecs != 15 ||
				s.TrustedProxies != nil || s.CORSOrigins != nil || s.DemoMode || s.EVMRPCURL.Set() {
				return fmt.Errorf("got %+v", s)
			}
			return nil
		}, ""},
		{"all set", map[string]string{
			"ECTO_BIND_HOST": "[::1]", "ECTO_BIND_PORT": "0", "OBSERVER_TOKEN": " tok with spaces ", "ECTOLEDGER_AUDITOR_TOKEN": "aud",
			"ECTOLEDGER_AGENT_TOKEN": "agt", "API_RATE_LIMIT_PER_SECOND": "1000", "API_RATE_LIMIT_BURST": "2000",
			"SESSION_RATE_LIMIT_PER_SECOND": "7", "SESSION_RATE_LIMIT_BURST": "8", "SSE_RATE_LIMIT_PER_SECOND": "9", "SSE_RATE_LIMIT_BURST": "11",
			"SSE_KEEPALIVE_SECS": "10", "ECTO_TRUSTED_PROXIES": "10.0.0.0/8, 127.0.0.1", "ECTO_CORS_ORIGINS": "https://ops.example.com,http://localhost:8080",
			"ECTO_DEMO_MODE": "TRUE", "EVM_RPC_URL": "https://rpc.example.org/v3/key123", "EVM_CONTRACT_ADDRESS": "0x" + strings.Repeat("aB", 20),
		}, func(s Server) error {
			if s.BindHost != "::1" || s.BindPort != 0 || s.ObserverToken.Reveal() != " tok with spaces " || s.AuditorToken.Reveal() != "aud" ||
				s.AgentToken.Reveal() != "agt" || s.APIRate != 1000 || s.APIBurst != 2000 || s.SessionRate != 7 || s.SessionBurst != 8 ||
				s.SSERate != 9 || s.SSEBurst != 11 || s.SSEKeepAliveSecs != 10 || !s.DemoMode || !s.EVMRPCURL.Set() {
				return fmt.Errorf("got %+v", s)
			}
			want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}
			if fmt.Sprint(s.TrustedProxies) != fmt.Sprint(want) {
				return fmt.Errorf("proxies %v, want %v", s.TrustedProxies, want)
			}
			if strings.Join(s.CORSOrigins, " ") != "https://ops.example.com http://localhost:8080" {
				return fmt.Errorf("origins %v", s.CORSOrigins)
			}
			if p := fmt.Sprintf("%v %+v %#v", s, s, s); strings.Contains(p, "tok with spaces") || strings.Contains(p, "key123") {
				return fmt.Errorf("secret printed: %s", p)
			}
			return nil
		}, ""},
		{"cors wildcard", map[string]string{"ECTO_CORS_ORIGINS": "*"}, func(s Server) error {
			if s.CORSOrigins != nil {
				return fmt.Errorf("origins %v", s.CORSOrigins)
			}
			return nil
		}, ""},
		{"host name", map[string]string{"ECTO_BIND_HOST": "LocalHost"}, func(s Server) error {
			if s.BindHost != "localhost" {
				return fmt.Errorf("host %q", s.BindHost)
			}
			return nil
		}, ""},
		{"bad host", map[string]string{"ECTO_BIND_HOST": "http://0.0.0.0"}, nil, "ECTO_BIND_HOST"},
		{"port too big", map[string]string{"ECTO_BIND_PORT": "65536"}, nil, "ECTO_BIND_PORT"},
		{"rate zero", map[string]string{"API_RATE_LIMIT_PER_SECOND": "0"}, nil, "API_RATE_LIMIT_PER_SECOND"},
		{"burst negative", map[string]string{"API_RATE_LIMIT_BURST": "-3"}, nil, "API_RATE_LIMIT_BURST"},
		{"session rate float", map[string]string{"SESSION_RATE_LIMIT_PER_SECOND": "1.5"}, nil, "SESSION_RATE_LIMIT_PER_SECOND"},
		{"session burst text", map[string]string{"SESSION_RATE_LIMIT_BURST": "lots"}, nil, "SESSION_RATE_LIMIT_BURST"},
		{"sse rate zero", map[string]string{"SSE_RATE_LIMIT_PER_SECOND": "0"}, nil, "SSE_RATE_LIMIT_PER_SECOND"},
		{"sse burst zero", map[string]string{"SSE_RATE_LIMIT_BURST": "0"}, nil, "SSE_RATE_LIMIT_BURST"},
		{"keepalive zero", map[string]string{"SSE_KEEPALIVE_SECS": "0"}, nil, "SSE_KEEPALIVE_SECS"},
		{"proxy garbage", map[string]string{"ECTO_TRUSTED_PROXIES": "10.0.0.0/33"}, nil, "ECTO_TRUSTED_PROXIES"},
		{"origin with path", map[string]string{"ECTO_CORS_ORIGINS": "https://a.example/"}, nil, "ECTO_CORS_ORIGINS"},
		{"origin upper case", map[string]string{"ECTO_CORS_ORIGINS": "https://A.example"}, nil, "ECTO_CORS_ORIGINS"},
		{"origin mixed with star", map[string]string{"ECTO_CORS_ORIGINS": "*,https://a.example"}, nil, "ECTO_CORS_ORIGINS"},
		{"demo typo", map[string]string{"ECTO_DEMO_MODE": "yes"}, nil, "ECTO_DEMO_MODE"},
		{"evm url", map[string]string{"EVM_RPC_URL": "ftp://x"}, nil, "EVM_RPC_URL"},
		{"evm address", map[string]string{"EVM_CONTRACT_ADDRESS": "0x123"}, nil, "EVM_CONTRACT_ADDRESS"},
		// Connection and idle-session limits (issue 13): zero would disable
		// a bound, so only ECTO_MAX_CONNECTIONS takes 0 (derive it).
		{"connection limits", map[string]string{"ECTO_MAX_CONNECTIONS": "900", "ECTO_MAX_CONNECTIONS_PER_IP": "20", "ECTO_IDLE_TIMEOUT_SECS": "5",
			"ECTO_BODY_TIMEOUT_SECS": "7", "ECTO_MAX_IDLE_SESSIONS": "50", "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN": "4", "ECTO_SESSION_IDLE_SECS": "60"}, func(s Server) error {
			if s.MaxConnections != 900 || s.MaxConnectionsPerIP != 20 || s.IdleTimeoutSecs != 5 || s.BodyTimeoutSecs != 7 ||
				s.MaxIdleSessions != 50 || s.MaxIdleSessionsPerToken != 4 || s.SessionIdleSecs != 60 {
				return fmt.Errorf("limits %+v", s)
			}
			return nil
		}, ""},
		{"limit defaults", map[string]string{}, func(s Server) error {
			if s.MaxConnections != 0 || s.MaxConnectionsPerIP != 512 || s.IdleTimeoutSecs != 15 || s.BodyTimeoutSecs != 30 ||
				s.MaxIdleSessions != 1000 || s.MaxIdleSessionsPerToken != 100 || s.SessionIdleSecs != 300 {
				return fmt.Errorf("limits %+v", s)
			}
			return nil
		}, ""},
		{"per-ip zero", map[string]string{"ECTO_MAX_CONNECTIONS_PER_IP": "0"}, nil, "ECTO_MAX_CONNECTIONS_PER_IP"},
		{"connections negative", map[string]string{"ECTO_MAX_CONNECTIONS": "-1"}, nil, "ECTO_MAX_CONNECTIONS"},
		{"idle zero", map[string]string{"ECTO_IDLE_TIMEOUT_SECS": "0"}, nil, "ECTO_IDLE_TIMEOUT_SECS"},
		{"body text", map[string]string{"ECTO_BODY_TIMEOUT_SECS": "soon"}, nil, "ECTO_BODY_TIMEOUT_SECS"},
		{"idle sessions zero", map[string]string{"ECTO_MAX_IDLE_SESSIONS_PER_TOKEN": "0"}, nil, "ECTO_MAX_IDLE_SESSIONS_PER_TOKEN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Load(MapLookup(tc.env))
			if tc.bad != "" {
				var ce *Error
				if err == nil || !errors.As(err, &ce) || ce.Var != tc.bad {
					t.Fatalf("got %v; want an error naming %s", err, tc.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != nil {
				if err := tc.want(c.Server); err != nil {
					t.Error(err)
				}
			}
		})
	}
}
