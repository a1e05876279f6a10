package postgres

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/jackc/pgx/v5"
)

// Several engine processes share one database. These tests stand two or
// more handles on one store in for them: nothing but PostgreSQL is shared
// between handles (each has its own connections, clock offset and
// watches), so what holds here holds across processes.

func openHandles(t *testing.T, n int) (string, []udb.Database) {
	t.Helper()
	url := newStore(t)
	var o opener
	dbs := make([]udb.Database, n)
	for i := range dbs {
		dbs[i] = o.open(t, url)
	}
	return url, dbs
}

func mustTx(t *testing.T, db udb.Database) udb.Transaction {
	t.Helper()
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tx.Cancel)
	return tx
}

func mustGRV(t *testing.T, tx udb.Transaction) int64 {
	t.Helper()
	v, err := tx.GetReadVersion(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func put(t *testing.T, db udb.Database, k, v string) int64 {
	t.Helper()
	return commitWith(t, db, k+"="+v, func(tx udb.Transaction) { tx.Set([]byte(k), []byte(v)) })
}

// commitWith commits what f does in one transaction of db (what names it in a failure)
// and returns the commit version.
func commitWith(t *testing.T, db udb.Database, what string, f func(tx udb.Transaction)) int64 {
	t.Helper()
	tx := mustTx(t, db)
	f(tx)
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatalf("commit %s: %v", what, err)
	}
	cv, err := tx.GetCommittedVersion()
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

func TestProcessesConflictRules(t *testing.T) {
	_, dbs := openHandles(t, 2)
	a, b := dbs[0], dbs[1]
	ctx := t.Context()
	put(t, a, "k", "0")

	t.Run("ReadThenWriteElsewhere", func(t *testing.T) {
		t1, t2 := mustTx(t, a), mustTx(t, b)
		mustGRV(t, t1)
		mustGRV(t, t2)
		if _, err := t1.Get(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		t2.Set([]byte("k"), []byte("b"))
		if err := t2.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		t1.Set([]byte("x"), []byte("a"))
		if err := t1.Commit(ctx); !udb.HasCode(err, udb.CodeNotCommitted) {
			t.Fatalf("T1 read k, T2 (other process) wrote k after T1's read version: got %v, want not_committed", err)
		}
	})
	t.Run("PhantomInRange", func(t *testing.T) {
		t1, t2 := mustTx(t, a), mustTx(t, b)
		mustGRV(t, t1)
		mustGRV(t, t2)
		if _, err := t1.GetRange(udb.FirstGreaterOrEqual([]byte("p/")), udb.FirstGreaterOrEqual([]byte("p0")), udb.RangeOptions{}).All(ctx); err != nil {
			t.Fatal(err)
		}
		t2.Set([]byte("p/new"), []byte("b"))
		if err := t2.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		t1.Set([]byte("y"), []byte("a"))
		if err := t1.Commit(ctx); !udb.HasCode(err, udb.CodeNotCommitted) {
			t.Fatalf("T2 inserted into the range T1 scanned: got %v, want not_committed", err)
		}
	})
	t.Run("WriteAfterCommittedReader", func(t *testing.T) {
		// T2 reads k and commits; T1, older, then blind-writes k. Serial
		// order T2, T1 exists, so FoundationDB commits both.
		t1, t2 := mustTx(t, a), mustTx(t, b)
		mustGRV(t, t1)
		mustGRV(t, t2)
		if _, err := t2.Get(ctx, []byte("k")); err != nil {
			t.Fatal(err)
		}
		t2.Set([]byte("z"), []byte("b"))
		if err := t2.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		t1.Set([]byte("k"), []byte("a"))
		if err := t1.Commit(ctx); err != nil {
			t.Fatalf("blind write after a committed reader in another process: %v", err)
		}
	})
	t.Run("ReadVersionSeesOtherProcessCommit", func(t *testing.T) {
		for i := range 10 {
			cv := put(t, dbs[i%2], "seq", fmt.Sprint(i))
			tx := mustTx(t, dbs[(i+1)%2])
			if rv := mustGRV(t, tx); rv < cv {
				t.Fatalf("read version %d in one process is below commit version %d acknowledged in the other", rv, cv)
			}
			v, err := tx.Get(ctx, []byte("seq"))
			if err != nil || string(v) != fmt.Sprint(i) {
				t.Fatalf("read after the other process's commit: %q, %v", v, err)
			}
		}
	})
	t.Run("SetReadVersionFromOtherProcess", func(t *testing.T) {
		cv := put(t, a, "snap", "old")
		put(t, a, "snap", "new")
		tx := mustTx(t, b)
		tx.SetReadVersion(cv)
		v, err := tx.Get(ctx, []byte("snap"))
		if err != nil || string(v) != "old" {
			t.Fatalf("Get at another process's commit version: %q, %v; want old", v, err)
		}
	})
}

// TestProcessesNoLostUpdates runs atomic adds and serializable
// read-modify-writes from three processes at once: every increment lands.
func TestProcessesNoLostUpdates(t *testing.T) {
	_, dbs := openHandles(t, 3)
	const workers, each = 6, 8 // per process
	var wg sync.WaitGroup
	errs := make(chan error, len(dbs)*workers)
	for _, db := range dbs {
		for range workers {
			wg.Go(func() {
				for range each {
					_, err := db.Transact(t.Context(), func(tx udb.Transaction) (any, error) {
						tx.Atomic(udb.MutationAdd, []byte("adds"), binary.LittleEndian.AppendUint64(nil, 1))
						v, err := tx.Get(t.Context(), []byte("rmw"))
						if err != nil {
							return nil, err
						}
						n := uint64(0)
						if v != nil {
							n = binary.BigEndian.Uint64(v)
						}
						tx.Set([]byte("rmw"), binary.BigEndian.AppendUint64(nil, n+1))
						return nil, nil
					})
					if err != nil {
						errs <- err
						return
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	want := uint64(len(dbs) * workers * each)
	tx := mustTx(t, dbs[0])
	adds, _ := tx.Get(t.Context(), []byte("adds"))
	rmw, _ := tx.Get(t.Context(), []byte("rmw"))
	if got := binary.LittleEndian.Uint64(adds); got != want {
		t.Errorf("atomic adds: got %d, want %d", got, want)
	}
	if got := binary.BigEndian.Uint64(rmw); got != want {
		t.Errorf("read-modify-write counter: got %d, want %d", got, want)
	}
}

// TestProcessesVersionstampsInCommitOrder commits from two processes at
// once, each transaction writing a versionstamped key and the value of a
// counter it increments: the stamps are unique, carry the commit version,
// and sort in the counter's (the commit) order.
func TestProcessesVersionstampsInCommitOrder(t *testing.T) {
	_, dbs := openHandles(t, 2)
	const per = 20
	type rec struct {
		stamp [10]byte
		cv    int64
	}
	var mu sync.Mutex
	var recs []rec
	var wg sync.WaitGroup
	for _, db := range dbs {
		for range 3 {
			wg.Go(func() {
				for range per {
					var f udb.VersionstampFuture
					_, err := db.Transact(t.Context(), func(tx udb.Transaction) (any, error) {
						v, err := tx.Get(t.Context(), []byte("n"))
						if err != nil {
							return nil, err
						}
						n := uint64(0)
						if v != nil {
							n = binary.BigEndian.Uint64(v)
						}
						nb := binary.BigEndian.AppendUint64(nil, n+1)
						tx.Set([]byte("n"), nb)
						key := append([]byte("vs/"), bytes.Repeat([]byte{0xff}, 10)...)
						key = binary.LittleEndian.AppendUint32(key, 3)
						tx.Atomic(udb.MutationSetVersionstampedKey, key, nb)
						f = tx.GetVersionstamp()
						return nil, nil
					})
					if err != nil {
						t.Error(err)
						return
					}
					s, err := f.Get(t.Context())
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					recs = append(recs, rec{stamp: s, cv: int64(binary.BigEndian.Uint64(s[:8]))})
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	rows, err := dbs[0].ReadTransact(t.Context(), func(tx udb.ReadTransaction) (any, error) {
		return tx.GetRange(udb.FirstGreaterOrEqual([]byte("vs/")), udb.FirstGreaterOrEqual([]byte("vs0")), udb.RangeOptions{}).All(t.Context())
	})
	if err != nil {
		t.Fatal(err)
	}
	kvs := rows.([]udb.KeyValue)
	if len(kvs) != len(recs) {
		t.Fatalf("%d stamped keys, want %d", len(kvs), len(recs))
	}
	// Keys sort by stamp; the counter values they hold must be 1, 2, 3, ...
	for i, kv := range kvs {
		if got := binary.BigEndian.Uint64(kv.Value); got != uint64(i+1) {
			t.Fatalf("stamped key %d (stamp %x) holds counter %d, want %d: stamps are not in commit order", i, kv.Key[3:13], got, i+1)
		}
	}
	slices.SortFunc(recs, func(x, y rec) int { return bytes.Compare(x.stamp[:], y.stamp[:]) })
	for i := 1; i < len(recs); i++ {
		if recs[i].stamp == recs[i-1].stamp {
			t.Fatalf("duplicate versionstamp %x", recs[i].stamp)
		}
	}
}

func TestProcessesWatch(t *testing.T) {
	_, dbs := openHandles(t, 2)
	a, b := dbs[0], dbs[1]
	put(t, a, "w", "0")
	tx := mustTx(t, a)
	w := tx.Watch([]byte("w"))
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	put(t, b, "w", "1")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := w.Wait(ctx); err != nil {
		t.Fatalf("watch in one process after a change committed by another: %v", err)
	}
}

// TestPrune checks that history older than the window goes: superseded
// rows, clears and recorded write ranges, and that a read version below the horizon
// then fails with transaction_too_old rather than reading a partial past.
func TestPrune(t *testing.T) {
	url, dbs := openHandles(t, 1)
	db := dbs[0].(*DB)
	ctx := t.Context()
	old := mustTx(t, db)
	mustGRV(t, old)
	for i := range 20 {
		put(t, db, "hot", fmt.Sprint(i))
		put(t, db, fmt.Sprintf("cold/%02d", i), "x")
	}
	clear := mustTx(t, db)
	clear.ClearRange([]byte("cold/"), []byte("cold0"))
	if err := clear.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(q string) int {
		t.Helper()
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var n int
		if err := c.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(`SELECT count(*) FROM udb_kv`); n != 40 {
		t.Fatalf("udb_kv holds %d rows before pruning, want the 20 versions of hot and the 20 cleared cold keys", n)
	}

	db.waitPruned() // the first commit's
	db.AdvanceVersions(udb.MVCCWindowVersions + 1)
	db.prune.Lock()
	db.prune.last = time.Time{}
	db.prune.Unlock()
	put(t, db, "other", "x") // raises the horizon and starts pruning
	db.waitPruned()

	if n := count(`SELECT count(*) FROM udb_kv`); n != 2 {
		t.Errorf("udb_kv holds %d rows after pruning, want 2 (the newest hot and other)", n)
	}
	if n := count(`SELECT count(*) FROM udb_write_log`); n != 1 {
		t.Errorf("udb_write_log holds %d ranges after pruning, want other's 1", n)
	}
	if _, err := old.Get(ctx, []byte("hot")); !udb.HasCode(err, udb.CodeTransactionTooOld) {
		t.Errorf("read at a version below the horizon: got %v, want transaction_too_old", err)
	}
	// The too-old check does not rely on this process's clock: another
	// process reading at the old version is refused by the horizon.
	snap := db.newSnapshot(mustGRV(t, old), 0)
	if _, err := snap.Get([]byte("hot")); !udb.HasCode(err, udb.CodeTransactionTooOld) {
		t.Errorf("read below the horizon with a fresh local clock: got %v, want transaction_too_old", err)
	}
	fresh := mustTx(t, db)
	if v, err := fresh.Get(ctx, []byte("hot")); err != nil || string(v) != "19" {
		t.Errorf("hot after pruning: %q, %v; want 19", v, err)
	}
	if kvs, err := fresh.GetRange(udb.FirstGreaterOrEqual([]byte("cold/")), udb.FirstGreaterOrEqual([]byte("cold0")), udb.RangeOptions{}).All(ctx); err != nil || len(kvs) != 0 {
		t.Errorf("cold range after pruning: %d rows, %v; want none", len(kvs), err)
	}
}

// TestPruneVacuumsTheWriteLog checks that pruning vacuums the write log itself once
// writeLogVacuumRows of its rows were deleted, and not before: until a vacuum the deleted
// rows stay in its index, where conflict checks of range reads walk them.
func TestPruneVacuumsTheWriteLog(t *testing.T) {
	ctx := t.Context()
	db, admin := openWithAdmin(t, newStore(t))
	if _, err := admin.Exec(ctx, `ALTER TABLE udb_write_log SET (autovacuum_enabled = false)`); err != nil {
		t.Fatal(err)
	}
	vacuums := func() int64 {
		t.Helper()
		var n int64
		if err := admin.QueryRow(ctx, `SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = 'udb_write_log'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// prune commits n keys, each a range of the write log, then prunes them all.
	prune := func(n int, prefix string) {
		t.Helper()
		commitWith(t, db, fmt.Sprint(n, " keys"), func(tx udb.Transaction) {
			for i := range n {
				tx.Set([]byte(fmt.Sprintf("%s/%06d", prefix, i)), []byte("v"))
			}
		})
		db.waitPruned()
		db.AdvanceVersions(udb.MVCCWindowVersions + 1)
		db.prune.Lock()
		db.prune.last = time.Time{}
		db.prune.Unlock()
		put(t, db, "other", prefix) // raises the horizon and starts pruning
		db.waitPruned()
	}
	prune(writeLogVacuumRows-10, "a")
	if n := vacuums(); n != 0 {
		t.Fatalf("the write log was vacuumed %d times after fewer than %d of its rows were pruned", n, writeLogVacuumRows)
	}
	prune(10, "b")
	if n := vacuums(); n != 1 {
		t.Fatalf("the write log was vacuumed %d times after %d of its rows were pruned, want once", n, writeLogVacuumRows)
	}
}

// pruneWaiting sets up a prune that will have to wait: hot has a superseded
// row, which the returned transaction of another session locks, and the
// next commit raises the horizon above it.
func pruneWaiting(t *testing.T) (*DB, *pgx.Conn, pgx.Tx) {
	t.Helper()
	db, admin := openWithAdmin(t, newStore(t))
	put(t, db, "hot", "0")
	put(t, db, "hot", "1")
	db.waitPruned() // the first commit's
	db.AdvanceVersions(udb.MVCCWindowVersions + 1)
	db.prune.Lock()
	db.prune.last = time.Time{}
	db.prune.Unlock()
	hold, err := admin.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hold.Rollback(context.Background()) })
	var held int
	if err := hold.QueryRow(t.Context(), `SELECT count(*) FROM (SELECT 1 FROM udb_kv WHERE superseded_at IS NOT NULL FOR UPDATE) s`).Scan(&held); err != nil || held != 1 {
		t.Fatalf("locking the superseded row of hot: %d rows, %v", held, err)
	}
	return db, admin, hold
}

// commitWithin commits k=x to db, failing t unless it is done within 10 s.
func commitWithin(t *testing.T, db *DB, k string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	tx := mustTx(t, db)
	tx.Set([]byte(k), []byte("x"))
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("commit of %s while a prune waits: %v", k, err)
	}
}

// supersededRows counts udb_kv's superseded rows.
func supersededRows(t *testing.T, admin *pgx.Conn) int {
	t.Helper()
	var n int
	if err := admin.QueryRow(t.Context(), `SELECT count(*) FROM udb_kv WHERE superseded_at IS NOT NULL`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPruneHoldsNoCommitLock checks that pruning runs outside the commit
// lock: while a prune waits (here on a row another session locked), commits
// go on, including the one that raised the horizon; once it can, the prune
// finishes. With 20,000 actors a prune took 60–150 ms, which every commit of
// every process waited for while it ran inside a commit.
func TestPruneHoldsNoCommitLock(t *testing.T) {
	db, admin, hold := pruneWaiting(t)
	db.pruneLockTimeout = "1min" // waits for the locked row until it is released
	ctx := t.Context()
	// The prune waits for hold's session, not just for any lock: other test
	// packages share the database, and their prunes wait for their commits.
	// hold runs on admin, whose view of the sessions would otherwise stay
	// what it was at the transaction's first look.
	holder := hold.Conn().PgConn().PID()
	waiting := func() bool {
		var n int
		if _, err := admin.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE $1::int = ANY(pg_blocking_pids(pid)) AND query LIKE '%DELETE FROM udb_kv WHERE superseded_at%'`, holder).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if waiting() {
		t.Fatal("a prune waits before a commit raised the horizon")
	}
	commitWithin(t, db, "raises-the-horizon")
	for deadline := time.Now().Add(10 * time.Second); !waiting(); {
		if time.Now().After(deadline) {
			t.Fatalf("the prune is not seen waiting for the row session %d locked; the database's sessions:\n%s", holder, sessions(t, admin))
		}
		time.Sleep(10 * time.Millisecond) // polling the server's view of its sessions
	}
	commitWithin(t, db, "during-the-prune")
	if v, err := mustTx(t, db).Get(ctx, []byte("during-the-prune")); err != nil || string(v) != "x" {
		t.Fatalf("reading the commit made while the prune waits: %q, %v", v, err)
	}

	if err := hold.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	db.waitPruned()
	if n := supersededRows(t, admin); n != 0 {
		t.Errorf("superseded rows after the prune finished: %d, want 0", n)
	}
}

// sessions lists the sessions of admin's database, for a failure message.
func sessions(t *testing.T, admin *pgx.Conn) string {
	t.Helper()
	if _, err := admin.Exec(t.Context(), `SELECT pg_stat_clear_snapshot()`); err != nil {
		return err.Error()
	}
	rows, err := admin.Query(t.Context(), `SELECT format('%s %s %s/%s blocked by %s: %s', pid, state, wait_event_type, wait_event,
		pg_blocking_pids(pid), left(regexp_replace(query, '\s+', ' ', 'g'), 100))
		FROM pg_stat_activity WHERE datname = current_database() ORDER BY pid`)
	if err != nil {
		return err.Error()
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err.Error()
	}
	return strings.Join(lines, "\n")
}

// TestPruneGivesWay checks that a pruning statement waits for a locked row
// only briefly (pruneLockTimeout), so that a commit waiting for it in turn is
// never failed as a deadlock, and that a later prune deletes what it left.
func TestPruneGivesWay(t *testing.T) {
	db, admin, hold := pruneWaiting(t)
	commitWithin(t, db, "raises-the-horizon")
	db.waitPruned() // gave up on the locked row
	if n := supersededRows(t, admin); n != 1 {
		t.Fatalf("superseded rows after a prune that gave way: %d, want hot's 1", n)
	}
	if err := hold.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	db.AdvanceVersions(1)
	db.prune.Lock()
	db.prune.last = time.Time{}
	db.prune.Unlock()
	commitWithin(t, db, "next")
	db.waitPruned()
	if n := supersededRows(t, admin); n != 0 {
		t.Errorf("superseded rows after the next prune: %d, want 0", n)
	}
}
