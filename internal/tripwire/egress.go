package tripwire

import "net/netip"

// AddrBlocked reports whether a connection to a must be refused by the
// address rules the URL checks apply (blocked ranges, and every IPv4
// address a carries by an embedding a network could translate it
// through; see Embedded), unless the address concerned lies in allowed.
// inner is the address that is blocked and p the range it lies in. The
// egress proxy calls it so that the proxy and the tripwire refuse the
// same destinations.
func AddrBlocked(a netip.Addr, allowed []netip.Prefix) (inner netip.Addr, p netip.Prefix, blocked bool) {
	return blockedRange(a, allowed)
}

// DialAddr returns the address a connection to a really goes to: the
// IPv4 address inside an IPv4-mapped or NAT64 (64:ff9b::/96) address, a
// itself otherwise. It is the form to dial and to record.
func DialAddr(a netip.Addr) netip.Addr { return unmap(a) }

// IsLegacyIP reports whether a normalised host name is a legacy numeric
// IPv4 form (0x7f.1, 2130706433, 0177.0.0.1) that resolvers accept as an
// address.
func IsLegacyIP(host string) bool { return isLegacyIP(host) }
