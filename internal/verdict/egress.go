package verdict

// CheckEgress names the egress proxy, which decides each network
// connection a sandboxed command makes (internal/egress).
const CheckEgress Check = "egress"

// Reason codes of the egress proxy. They are IronVise additions.
const (
	// EgressDomainNotAllowed: the host is not on the allowed domain list.
	EgressDomainNotAllowed Code = "egress_domain_not_allowed"
	// EgressIPLiteral: the target is an IP address outside the opted-in
	// ranges (IP literals are only dialled inside them).
	EgressIPLiteral Code = "egress_ip_literal"
	// EgressAddrBlocked: the address, or an address it carries, is in a
	// blocked range (metadata, loopback, private, link-local, …) and not
	// in an opted-in range.
	EgressAddrBlocked Code = "egress_addr_blocked"
	// EgressUnresolvable: the name did not resolve.
	EgressUnresolvable Code = "egress_unresolvable"
	// EgressDialFailed: no address that passed the checks could be reached.
	EgressDialFailed Code = "egress_dial_failed"
	// EgressNotTLS: a tunnel's first bytes were not a TLS ClientHello.
	EgressNotTLS Code = "egress_not_tls"
	// EgressSNIMismatch: the ClientHello's server name is missing or is
	// not the host the tunnel was opened to.
	EgressSNIMismatch Code = "egress_sni_mismatch"
	// EgressBadRequest: the client spoke neither a well-formed proxy
	// request nor SOCKS5 the proxy supports.
	EgressBadRequest Code = "egress_bad_request"
	// EgressCapConnections, EgressCapBytes and EgressCapDuration: a cap of
	// the command's budget was reached.
	EgressCapConnections Code = "egress_cap_connections"
	EgressCapBytes       Code = "egress_cap_bytes"
	EgressCapDuration    Code = "egress_cap_duration"
)
