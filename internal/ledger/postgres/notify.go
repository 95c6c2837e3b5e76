package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
)

// Commit notifications (issue 13, item 10). Instances sharing a database
// used to learn of each other's events only by polling the log (200 ms).
// Every write transaction that adds events now also runs pg_notify on the
// schema's channel, delivered when it commits; a listener holding one
// connection of the pool turns them into wake-ups. Polling stays as the
// fallback: a notification sent while the listener reconnects is lost.

// notifyChannel is the schema's channel name: a derived key, so schemas
// sharing a database (tests, tenants) do not wake each other.
func notifyChannel(schema string) string {
	return fmt.Sprintf("ironvise_log_%016x", uint64(lockKey("notify", schema)))
}

// notifySQL is what a write transaction runs to notify.
func notifySQL(schema string) string {
	return fmt.Sprintf("SELECT pg_notify('%s', '')", notifyChannel(schema))
}

// listenRetry is the pause before the listener reconnects.
const listenRetry = time.Second

// listener returns the Dialect.Listen of a schema: a goroutine, owned by
// ctx, that holds one pooled connection LISTENing on the channel and sends
// a coalesced wake-up per notification. It reconnects after failures and
// closes the channel when ctx ends.
func listener(schema string) func(ctx context.Context, db *sql.DB) (<-chan struct{}, error) {
	channel := notifyChannel(schema)
	return func(ctx context.Context, db *sql.DB) (<-chan struct{}, error) {
		out := make(chan struct{}, 1)
		wake := func() {
			select {
			case out <- struct{}{}:
			default:
			}
		}
		go func() {
			defer close(out)
			for ctx.Err() == nil {
				err := listenOnce(ctx, db, channel, wake)
				if ctx.Err() != nil {
					return
				}
				_ = err // the poll carries on; try again shortly
				// A reconnect may have missed notifications: wake the
				// reader once, so it reads the log now.
				wake()
				select {
				case <-ctx.Done():
					return
				case <-time.After(listenRetry):
				}
			}
		}()
		return out, nil
	}
}

// listenOnce LISTENs on one connection until it fails or ctx ends.
func listenOnce(ctx context.Context, db *sql.DB, channel string, wake func()) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("postgres: listen: %w", err)
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return errors.New("postgres: listen: not a pgx connection")
		}
		pc := sc.Conn()
		if _, err := pc.Exec(ctx, "LISTEN "+channel); err != nil {
			return fmt.Errorf("postgres: listen: %w", err)
		}
		// Leave the pooled connection as it was found (bounded: the
		// connection may be the one that failed).
		defer func() {
			uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			pc.Exec(uctx, "UNLISTEN "+channel)
		}()
		for {
			if _, err := pc.WaitForNotification(ctx); err != nil {
				return fmt.Errorf("postgres: wait for notification: %w", err)
			}
			wake()
		}
	})
}
