package egress

import (
	"context"
	"io"
	"net/netip"

	"github.com/ironvise/ironvise/internal/verdict"
)

// SOCKS5 (RFC 1928) constants the proxy uses.
const (
	socksVersion     = 5
	socksNoAuth      = 0
	socksNoMethod    = 0xff
	socksCmdConnect  = 1
	socksAtypIPv4    = 1
	socksAtypDomain  = 3
	socksAtypIPv6    = 4
	socksOK          = 0
	socksNotAllowed  = 2
	socksHostUnreach = 4
	socksRefused     = 5
	socksBadCommand  = 7
	socksBadAtyp     = 8
	socksFailure     = 1
)

func (s *session) socksReply(code byte) {
	s.client.Write([]byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0})
}

func (s *session) socks(ctx context.Context) verdict.Verdict {
	var hdr [2]byte
	if _, err := io.ReadFull(s.br, hdr[:]); err != nil {
		return deny(verdict.EgressBadRequest, "truncated SOCKS5 greeting: %v", err)
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(s.br, methods); err != nil {
		return deny(verdict.EgressBadRequest, "truncated SOCKS5 greeting: %v", err)
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		s.client.Write([]byte{socksVersion, socksNoMethod})
		return deny(verdict.EgressBadRequest, "the SOCKS5 client does not offer the no-authentication method")
	}
	if _, err := s.client.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return deny(verdict.EgressBadRequest, "the client left: %v", err)
	}
	var req [4]byte
	if _, err := io.ReadFull(s.br, req[:]); err != nil {
		return deny(verdict.EgressBadRequest, "truncated SOCKS5 request: %v", err)
	}
	if req[0] != socksVersion {
		s.socksReply(socksFailure)
		return deny(verdict.EgressBadRequest, "SOCKS5 request with version %d", req[0])
	}
	var host string
	switch req[3] {
	case socksAtypIPv4, socksAtypIPv6:
		b := make([]byte, 4)
		if req[3] == socksAtypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(s.br, b); err != nil {
			return deny(verdict.EgressBadRequest, "truncated SOCKS5 address: %v", err)
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case socksAtypDomain:
		n, err := s.br.ReadByte()
		if err != nil || n == 0 {
			s.socksReply(socksFailure)
			return deny(verdict.EgressBadRequest, "SOCKS5 request with an empty or truncated domain name")
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(s.br, b); err != nil {
			return deny(verdict.EgressBadRequest, "truncated SOCKS5 domain name: %v", err)
		}
		host = string(b)
	default:
		s.socksReply(socksBadAtyp)
		return deny(verdict.EgressBadRequest, "SOCKS5 address type %d is not supported", req[3])
	}
	var pb [2]byte
	if _, err := io.ReadFull(s.br, pb[:]); err != nil {
		return deny(verdict.EgressBadRequest, "truncated SOCKS5 port: %v", err)
	}
	port := uint16(pb[0])<<8 | uint16(pb[1])
	s.rec.Host, s.rec.Port = host, port
	if req[1] != socksCmdConnect {
		s.socksReply(socksBadCommand)
		return deny(verdict.EgressBadRequest, "SOCKS5 command %d is not supported (only CONNECT)", req[1])
	}
	v := s.open(ctx, host, port)
	if v.Denied() {
		switch v.Code {
		case verdict.EgressUnresolvable:
			s.socksReply(socksHostUnreach)
		case verdict.EgressDialFailed:
			s.socksReply(socksRefused)
		case verdict.EgressBadRequest:
			s.socksReply(socksFailure)
		default:
			s.socksReply(socksNotAllowed)
		}
		return v
	}
	s.socksReply(socksOK)
	return s.tunnel(v)
}
