package sqlite

import (
	"context"
	"database/sql"
	"os"
	"sync"
	"sync/atomic"
)

// When a store that stays open (Open: serve, and the commands that read)
// checkpoints its WAL into the database. SQLite's own automatic checkpoint
// (1,000 pages) runs inside the commit that crosses it: that commit's
// caller waits for two more fsyncs and for every page to be copied: about
// one daemon exec in sixty (docs/operate/performance.md). The
// writer's automatic checkpoint is off instead, and a goroutine with a
// connection of its own checkpoints after checkpointCommits commits, or
// sooner once the WAL file has grown by checkpointGrowth since the last
// checkpoint (a few large commits). Its checkpoints are PASSIVE: they never
// wait for, or hold up, the writer or a reader.
var (
	checkpointCommits uint64 = 100
	checkpointGrowth  int64  = 4 << 20
)

// checkpointer runs the WAL checkpoints of one store off the commit path.
type checkpointer struct {
	db      *sql.DB
	wal     string // the WAL file, whose growth it watches
	commits uint64 // checkpointCommits when it started
	growth  int64  // checkpointGrowth when it started
	pending atomic.Uint64
	kick    chan struct{}
	done    chan struct{}
	wg      sync.WaitGroup
}

// startCheckpointer starts the checkpointer of the database at path,
// which it reaches through db (one connection, not the writer's: a
// checkpoint there would wait for the commits it is meant to stay out of).
func startCheckpointer(db *sql.DB, path string) *checkpointer {
	c := &checkpointer{db: db, wal: path + "-wal", commits: checkpointCommits, growth: checkpointGrowth, kick: make(chan struct{}, 1), done: make(chan struct{})}
	c.wg.Add(1)
	go c.loop()
	return c
}

// committed is the store's AfterCommit: it counts the commit and wakes
// the loop without waiting for it.
func (c *checkpointer) committed() {
	c.pending.Add(1)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *checkpointer) loop() {
	defer c.wg.Done()
	base := c.walSize()
	for {
		select {
		case <-c.done:
			return
		case <-c.kick:
		}
		if c.pending.Load() < c.commits && c.walSize()-base < c.growth {
			continue
		}
		c.pending.Store(0)
		c.checkpoint()
		base = c.walSize()
	}
}

// checkpoint copies the WAL into the database. SQLite starts the WAL
// over at the next commit only if every frame in it was copied, so a pass
// during which commits added frames is followed by another (a short one:
// only those frames), a few at most. An error (SQLITE_BUSY while another
// process checkpoints, say) leaves the frames in the WAL, where they are
// as durable: the next trigger, or the last connection's close, copies
// them.
func (c *checkpointer) checkpoint() {
	for range 4 {
		var busy, frames, copied int64
		err := c.db.QueryRowContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
		if err != nil || busy != 0 || copied >= frames {
			return
		}
	}
}

// walSize is the WAL file's size, 0 when there is none. It only grows
// while SQLite reuses the file from its start after a checkpoint, so its
// growth is new WAL beyond what was there.
func (c *checkpointer) walSize() int64 {
	fi, err := os.Stat(c.wal)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// stop ends the loop and closes its connection.
func (c *checkpointer) stop() error {
	close(c.done)
	c.wg.Wait()
	return c.db.Close()
}
