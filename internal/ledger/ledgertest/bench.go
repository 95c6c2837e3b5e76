package ledgertest

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/ironvise/ironvise/internal/ledger"
)

// benchPayload is a typical observation (about 300 bytes of canonical
// JSON).
func benchPayload(i int) map[string]any {
	return map[string]any{
		"step": i, "action_seq": i, "truncated": false, "suspicious": false, "labels": []string{},
		"content":    "total 48\ndrwxr-xr-x  6 agent agent 4096 Nov 29 07:04 .\n-rw-r--r--  1 agent agent  812 go.mod\n" + strings.Repeat("x", 64),
		"raw_sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
	}
}

// BenchAppend measures durable, signed appends to sessions concurrent
// sessions, each appended to by writers goroutines, each call carrying
// batch events (1: Append; more: AppendBatch), and reports events/s.
// Every call returns only after its transaction committed durably.
func BenchAppend(b *testing.B, backend ledger.Backend, sessions, writers, batch int) {
	l, err := ledger.New(context.Background(), backend, ledger.Options{
		IssuerKey: mustKey(b), CheckpointInterval: -1,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close(context.Background())
	ids := make([]uuid.UUID, sessions)
	for i := range ids {
		s, err := l.CreateSession(context.Background(), ledger.SessionSpec{Goal: fmt.Sprintf("bench %d", i)})
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = s.ID
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	goroutines := sessions * writers
	errs := make(chan error, goroutines)
	for w := range goroutines {
		n := b.N / goroutines
		if w < b.N%goroutines {
			n++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < n; i += batch {
				recs := make([]ledger.Record, 0, batch)
				for j := i; j < min(i+batch, n); j++ {
					recs = append(recs, ledger.Record{Type: ledger.TypeObservation, Payload: benchPayload(j)})
				}
				if _, err := l.AppendBatch(context.Background(), ids[w%sessions], recs); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/el.Seconds(), "events/s")
}

func mustKey(tb testing.TB) *ledger.SigningKey {
	k, err := ledger.GenerateSigningKey(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

// VerifyFixture is a ledger holding one sealed session of Events events,
// for BenchVerify.
type VerifyFixture struct {
	L       *ledger.Ledger
	Session uuid.UUID
	Events  int
}

// NewVerifyFixture appends n events to one session (from 8 writers, to
// build it quickly) and seals it.
func NewVerifyFixture(tb testing.TB, backend ledger.Backend, n int) *VerifyFixture {
	ctx := context.Background()
	l, err := ledger.New(ctx, backend, ledger.Options{IssuerKey: mustKey(tb), CheckpointInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: "verify benchmark"})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n-3; i += 8 {
				if _, err := l.Append(ctx, s.ID, ledger.TypeObservation, benchPayload(i)); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if _, err := l.Seal(ctx, s.ID, "bench"); err != nil {
		tb.Fatal(err)
	}
	r, err := l.VerifySession(ctx, s.ID)
	if err != nil {
		tb.Fatal(err)
	}
	mustOK(tb, r)
	return &VerifyFixture{L: l, Session: s.ID, Events: r.EventCount}
}

// BenchVerify measures VerifySession (all five checks: hashes, signatures,
// goal, inclusion proofs against the checkpoint, seal) and reports
// events/s.
func BenchVerify(b *testing.B, f *VerifyFixture) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		r, err := f.L.VerifySession(context.Background(), f.Session)
		if err != nil || !r.OK() {
			b.Fatalf("verify: %v %+v", err, r)
		}
	}
	b.ReportMetric(float64(f.Events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportCPU(b, cpu)
}

// BigLog is a ledger whose Merkle log holds about n events, all of one
// session, covered by a checkpoint.
type BigLog struct {
	L       *ledger.Ledger
	Session uuid.UUID
	N       int
}

// NewBigLog builds a log of n events quickly: the events are hash-chained
// and their Merkle hashes computed exactly as the ledger does, but they are
// written in large batches straight through the backend, and their
// signatures are placeholders (proofs never read signatures). The ledger
// then writes a real signed checkpoint over the whole log.
func NewBigLog(tb testing.TB, open func() ledger.Backend, n int) *BigLog {
	ctx := context.Background()
	issuer := mustKey(tb)
	l, err := ledger.New(ctx, open(), ledger.Options{IssuerKey: issuer, CheckpointInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	if err := l.Close(ctx); err != nil {
		tb.Fatal(err)
	}
	b := open()
	key := mustKey(tb)
	id := uuid.Must(uuid.NewV7())
	mem := map[int64]ledger.Hash{}
	var size int64
	if err := b.View(ctx, func(tx ledger.ReadTx) error {
		if size, err = tx.LogSize(ctx); err != nil {
			return err
		}
		hs, err := tx.HashRange(ctx, 0, tlog.StoredHashCount(size))
		for _, h := range hs {
			mem[h.Index] = h.Hash
		}
		return err
	}); err != nil {
		tb.Fatal(err)
	}
	reader := tlog.HashReaderFunc(func(ix []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(ix))
		for i, x := range ix {
			h, ok := mem[x]
			if !ok {
				return nil, fmt.Errorf("hash %d not in memory", x)
			}
			out[i] = tlog.Hash(h)
		}
		return out, nil
	})
	goal := "big log"
	now := time.Now().UnixMicro()
	pub := key.Public()
	prev := ledger.GenesisPrevHash(id)
	sig := make([]byte, 64)
	const chunk = 20000
	for start := 0; start < n; start += chunk {
		var ch ledger.Changes
		if start == 0 {
			ch.NewSessions = []ledger.Session{{ID: id, Goal: goal, GoalHash: ledger.GoalHash(goal), Status: ledger.StatusRunning,
				CreatedAt: time.UnixMicro(now), PublicKey: pub, DID: ledger.DIDKey(pub), OwnerID: "bench", LeaseUntil: time.UnixMicro(now)}}
			ch.Keys = []ledger.KeyRecord{{SessionID: id, KeyID: ledger.KeyID(pub), PublicKey: pub, KEK: "issuer", CreatedMicros: now}}
		}
		for i := start; i < min(start+chunk, n); i++ {
			typ, payload := ledger.TypeObservation, []byte(fmt.Sprintf(`{"content":"event %d","type":"observation"}`, i))
			if i == 0 {
				typ = ledger.TypeGenesis
				payload = []byte(fmt.Sprintf(`{"goal":%q,"goal_hash":%q,"policy_hash":null,"session_public_key":%q,"type":"genesis"}`, goal, ledger.GoalHash(goal), hex.EncodeToString(pub)))
			}
			ev := ledger.Event{LogIndex: size, SessionID: id, Seq: uint64(i), Type: typ, Payload: payload, CreatedMicros: now,
				PrevHash: prev, Signature: sig, KeyID: ledger.KeyID(pub), Signer: ledger.SignerSession}
			ev.Hash = ledger.EventHash(prev, id, ev.Seq, now, typ, payload)
			prev = ev.Hash
			hs, err := tlog.StoredHashes(size, ev.Hash[:], reader)
			if err != nil {
				tb.Fatal(err)
			}
			base := tlog.StoredHashIndex(0, size)
			for j, h := range hs {
				mem[base+int64(j)] = ledger.Hash(h)
				ch.Hashes = append(ch.Hashes, ledger.StoredHash{Index: base + int64(j), Hash: ledger.Hash(h)})
			}
			ch.Events = append(ch.Events, ev)
			size++
		}
		if err := b.Update(ctx, func(tx ledger.WriteTx) error { return tx.Apply(ctx, &ch) }); err != nil {
			tb.Fatal(err)
		}
		// Keep only the frontier in memory.
		keep := map[int64]ledger.Hash{}
		for _, st := range ledger.CompleteSubtrees(size) {
			keep[st.RootIndex()] = mem[st.RootIndex()]
		}
		mem = keep
	}
	l, err = ledger.New(ctx, b, ledger.Options{IssuerKey: issuer, CheckpointInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	cp, err := l.Checkpoint(ctx)
	if err != nil || cp.TreeSize != size {
		tb.Fatalf("checkpoint = %d, %v; want %d", cp.TreeSize, err, size)
	}
	return &BigLog{L: l, Session: id, N: n}
}

// BenchInclusionProof measures building an inclusion proof (event lookup,
// checkpoint read and the audit path read from the stored hashes) for
// random events of the big log against its newest checkpoint; each proof
// is also verified, inside the timed loop.
func BenchInclusionProof(b *testing.B, g *BigLog) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		seq := uint64(rng.IntN(g.N))
		p, err := g.L.InclusionProof(ctx, g.Session, seq, 0)
		if err != nil {
			b.Fatal(err)
		}
		if err := ledger.VerifyInclusion(p.Path, p.TreeSize, p.Root, p.LogIndex, p.EventHash); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/proof")
}

// VerifyFullFixture is a ledger holding many small sealed sessions, for
// BenchVerifyFull.
type VerifyFullFixture struct {
	L        *ledger.Ledger
	Sessions int
	Events   int64
}

// NewVerifyFullFixture creates sessions sealed sessions of about perSession
// events each (the genesis, perSession-2 observations and the seal: an
// `ironvise exec` writes about 11), from 16 writers so that appends share
// transactions and the fixture builds in seconds rather than minutes.
func NewVerifyFullFixture(tb testing.TB, backend ledger.Backend, sessions, perSession int) *VerifyFullFixture {
	ctx := context.Background()
	l, err := ledger.New(ctx, backend, ledger.Options{IssuerKey: mustKey(tb), CheckpointInterval: -1})
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	const writers = 16
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < sessions; i += writers {
				if err := benchSession(ctx, l, i, perSession); err != nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if tb.Failed() {
		tb.FailNow()
	}
	rep, err := l.VerifyFull(ctx)
	if err != nil || !rep.OK() {
		tb.Fatalf("fixture does not verify: %v %v", err, rep.Err())
	}
	return &VerifyFullFixture{L: l, Sessions: rep.SessionsChecked, Events: rep.LogSize}
}

func benchSession(ctx context.Context, l *ledger.Ledger, i, events int) error {
	s, err := l.CreateSession(ctx, ledger.SessionSpec{Goal: fmt.Sprintf("verify-full benchmark %d", i)})
	if err != nil {
		return err
	}
	for j := range max(events-2, 0) {
		if _, err := l.Append(ctx, s.ID, ledger.TypeObservation, benchPayload(j)); err != nil {
			return err
		}
	}
	_, err = l.Seal(ctx, s.ID, "bench")
	return err
}

// BenchVerifyFull measures VerifyFull (`serve --verify-full`: the whole
// log rebuilt, every chain with the five checks) and reports the seconds
// per run and events/s.
func BenchVerifyFull(b *testing.B, f *VerifyFullFixture) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for b.Loop() {
		rep, err := f.L.VerifyFull(context.Background())
		if err != nil || !rep.OK() {
			b.Fatalf("verify-full: %v %v", err, rep.Err())
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/run")
	b.ReportMetric(float64(f.Events)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
	reportCPU(b, cpu)
}

// reportCPU reports the CPU time the process used per operation since
// start (a cpuTime reading), where the platform can tell. On a machine
// shared with other jobs, wall-clock time measures the load as much as the
// code; CPU time per operation does not, and divided by the cores it gives
// the best wall-clock time parallel code can reach on an idle machine.
func reportCPU(b *testing.B, start time.Duration) {
	if start >= 0 {
		b.ReportMetric(float64((cpuTime()-start).Milliseconds())/float64(b.N), "cpu-ms/op")
	}
}
