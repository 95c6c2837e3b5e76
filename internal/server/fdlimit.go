package server

import "fmt"

// fdReserve is what the connection cap leaves below the open-file limit:
// the database pool and its files, the guard worker pipes of every
// session, the sandbox's pipes and namespaces, the listener and the logs.
// A cap at the limit itself would let clients take the descriptors
// accept needs to answer 503, so the server would stall instead (issue
// 13: two clients holding 24,000 idle connections against a limit of
// 20,000).
func fdReserve(limit int) int { return max(256, limit/10) }

// connectionCap resolves the global connection cap: explicit (> 0) must
// stay below the open-file limit minus fdReserve; 0 derives it from the
// limit. limit <= 0 means the limit is unknown (fdLimit's stub).
func connectionCap(explicit, limit int) (int, error) {
	if limit <= 0 {
		if explicit > 0 {
			return explicit, nil
		}
		return defaultCapUnknownLimit, nil
	}
	room := limit - fdReserve(limit)
	if room < 16 {
		return 0, fmt.Errorf("server: the open-file limit is %d, too low to serve (IronVise keeps %d descriptors for itself); raise it (ulimit -n 4096, or LimitNOFILE= in a systemd unit)", limit, fdReserve(limit))
	}
	if explicit == 0 {
		return room, nil
	}
	if explicit > room {
		return 0, fmt.Errorf("server: ECTO_MAX_CONNECTIONS=%d is not below the open-file limit %d minus the %d descriptors IronVise keeps for itself: connections beyond %d could not even be refused; lower it, or raise the limit (ulimit -n)", explicit, limit, fdReserve(limit), room)
	}
	return explicit, nil
}

// defaultCapUnknownLimit is the cap where the open-file limit cannot be
// read (Windows has no such per-process limit on sockets).
const defaultCapUnknownLimit = 8192
