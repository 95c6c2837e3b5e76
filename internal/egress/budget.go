package egress

import (
	"sync/atomic"
	"time"
)

// Limits are the caps of one command's network use. A zero field means
// the default of DefaultLimits.
type Limits struct {
	// MaxBytesUp and MaxBytesDown cap the bytes sent and received over
	// all the command's connections together.
	MaxBytesUp, MaxBytesDown int64
	// MaxConnections caps how many connections the command may ask
	// for, refused ones included, so that a command cannot probe the
	// list without end.
	MaxConnections int64
	// MaxConnDuration caps one connection; MaxDuration caps all of them,
	// counted from NewBudget.
	MaxConnDuration, MaxDuration time.Duration
}

// DefaultLimits are generous enough for a package install or a clone of
// a large repository and bound a command that streams data out: 256 MiB
// up, 4 GiB down, 512 connections, 10 minutes per connection and 1 hour
// in all.
func DefaultLimits() Limits {
	return Limits{
		MaxBytesUp:      256 << 20,
		MaxBytesDown:    4 << 30,
		MaxConnections:  512,
		MaxConnDuration: 10 * time.Minute,
		MaxDuration:     time.Hour,
	}
}

// Budget is what one command has left of its Limits. Make one per command
// with NewBudget; it is safe for concurrent use.
type Budget struct {
	limits   Limits
	deadline time.Time
	conns    atomic.Int64
	up, down atomic.Int64
}

// NewBudget starts a command's budget now; zero fields of l take their
// defaults.
func NewBudget(l Limits) *Budget {
	d := DefaultLimits()
	if l.MaxBytesUp <= 0 {
		l.MaxBytesUp = d.MaxBytesUp
	}
	if l.MaxBytesDown <= 0 {
		l.MaxBytesDown = d.MaxBytesDown
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = d.MaxConnections
	}
	if l.MaxConnDuration <= 0 {
		l.MaxConnDuration = d.MaxConnDuration
	}
	if l.MaxDuration <= 0 {
		l.MaxDuration = d.MaxDuration
	}
	return &Budget{limits: l, deadline: time.Now().Add(l.MaxDuration)}
}

// Limits returns the caps in force.
func (b *Budget) Limits() Limits { return b.limits }

// Used returns the connections opened and bytes moved so far.
func (b *Budget) Used() (conns, up, down int64) { return b.conns.Load(), b.up.Load(), b.down.Load() }

// takeConn counts a new connection; false when the cap is reached.
func (b *Budget) takeConn() bool { return b.conns.Add(1) <= b.limits.MaxConnections }

// connDeadline is when a connection opened now must end.
func (b *Budget) connDeadline(start time.Time) time.Time {
	d := start.Add(b.limits.MaxConnDuration)
	if b.deadline.Before(d) {
		return b.deadline
	}
	return d
}

// take adds n bytes in one direction and reports whether the cap still
// holds.
func (b *Budget) take(up bool, n int64) bool {
	if up {
		return b.up.Add(n) <= b.limits.MaxBytesUp
	}
	return b.down.Add(n) <= b.limits.MaxBytesDown
}
