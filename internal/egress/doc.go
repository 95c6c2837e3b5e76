// Package egress is the network exit of a sandboxed command: one listener
// that speaks both an HTTP proxy (plain HTTP in absolute form, and
// CONNECT) and SOCKS5, and lets a connection through only to a host on
// the allowed domain list at an address the tripwire's address rules
// accept.
//
// # Decisions
//
//   - A name must be on the list ([ParseDomains]): an exact name, or
//     "*.example.com", which matches any name below example.com
//     (api.example.com, a.b.example.com) but not example.com itself; list
//     both to allow both.
//   - The proxy resolves every name itself, again for every connection,
//     through the injected [Resolver], so DNS answers cannot be cached by
//     the client or carry data out. Every address is checked with
//     [Rules.CheckAddr] (the tripwire's blocked ranges and embedded IPv4
//     forms, unless inside a range of ECTO_SANDBOX_EGRESS_ALLOW_CIDRS) and
//     only passing addresses are dialled, in the resolver's order. A name
//     that resolves to any blocked address is refused, as the tripwire
//     refuses it, so the two agree.
//   - An IP-literal target is refused unless it lies inside an opted-in
//     range; the domain list plays no part for it. A TLS client sends no
//     server name for an IP address, so its ClientHello must carry none.
//   - A tunnel (CONNECT or SOCKS5) must start with a TLS ClientHello whose
//     server name equals the target host (case-insensitive, one trailing
//     dot tolerated). Anything else is refused by closing the tunnel; there
//     is no TLS interception. Any port is allowed.
//   - Plain HTTP is forwarded one request per client connection, to the
//     host of the request URI (or of the Host header for an origin-form
//     request): the request the server receives names the host that was
//     checked.
//
// # Records and caps
//
// Every connection, allowed or refused, ends with one [Record] passed to
// Config.OnConnection. A [Budget], made per command, caps connections,
// bytes each way and time (see [DefaultLimits]).
package egress
