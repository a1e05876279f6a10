package postgres

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"slices"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/tidwall/btree"
)

// notifyChannel is the LISTEN/NOTIFY channel every commit notifies, so that
// processes with armed watches look at their keys again.
const notifyChannel = "berth_udb_commit"

// pruneEvery is how often a process's commits prune history older than the
// window: the rows and write ranges no admissible read version needs.
const pruneEvery = time.Second

// A commit group (group.go: the commits of one process that arrive while
// another is in flight) is one PostgreSQL transaction at READ COMMITTED, so
// that each statement sees every commit finished before it, sent in two
// round trips after BEGIN so that the lock is held for as little as possible:
//
//  1. lockSQL locks the udb_meta row, which serialises commits of every
//     process, and reads the last commit version, the horizon and the store's
//     format (schema.go: a process of an older format must not commit). The
//     commit version is above both the last one and every read version
//     handed out (those are committed versions), and follows the clock.
//     In the same round trip, once the lock is held: whether a read
//     conflict range was written after the read version (conflictSQL), and
//     the newest values of the keys that atomic operations change.
//  2. A read version below the horizon or older than the window fails with
//     transaction_too_old, a conflict with not_committed; so does a read
//     range written by an earlier commit of the group.
//  3. The mutations of the commits that pass are folded in order into a final value per
//     key plus the cleared ranges, and everything is written in one batch
//     that ends with COMMIT: cleared ranges, point writes, the write ranges
//     in udb_write_log, the new last version, a new horizon when pruning is
//     due, and a NOTIFY.
//  4. Pruning itself (the history below the new horizon) runs after COMMIT
//     on a connection of its own, outside the lock: see startPrune.
//
// Only a failure of that last batch other than an error the server reports
// (which rolls the transaction back) leaves the outcome unknown (1021).
const lockSQL = `SELECT version, horizon, format, ` + clockSQL + ` + $1::bigint FROM udb_meta WHERE id = 1 FOR UPDATE`

// conflictSQL reports whether a range in ($2, $3) shares a key with a write
// range committed after version $1: one that begins inside it (the primary
// key), or a wider one that begins before it and ends after its begin
// (udb_write_log_ranges, the ranges after $1: few, since read versions are
// recent and most writes are single keys).
const conflictSQL = `
SELECT EXISTS (SELECT 1 FROM unnest($2::bytea[], $3::bytea[]) AS r(b, e) WHERE
	EXISTS (SELECT 1 FROM udb_write_log w WHERE w.key >= r.b AND w.key < r.e AND w.version > $1)
	OR EXISTS (SELECT 1 FROM udb_write_log w WHERE w.end_key IS NOT NULL AND w.version > $1
		AND w.key < r.b AND w.end_key > r.b))`

// newestSQL reads the newest value of each key in $1; NULL is absent.
const newestSQL = `SELECT key, value FROM udb_kv WHERE key = ANY($1::bytea[]) AND superseded_at IS NULL`

// scanNewest puts the present keys of newestSQL's rows into values.
func scanNewest(rows pgx.Rows, values map[string][]byte) error {
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			return err
		}
		if v != nil {
			values[string(k)] = v
		}
	}
	return rows.Err()
}

// clearSQL clears the range [$2, $3) at version $1, except keys in $4 (their
// final value is written by pointSQL): each live newest row is superseded,
// which is all a clear needs, since a row is visible only up to its
// superseded_at. One statement per range, with scalar bounds: given the
// ranges as arrays, PostgreSQL's generic plan cannot tell that they are
// narrow and scans every newest row of the table (50 ms at 80,000 keys,
// under the commit lock), where the bounds as parameters take the index.
const clearSQL = `
UPDATE udb_kv SET superseded_at = $1
WHERE key >= $2 AND key < $3 AND superseded_at IS NULL AND value IS NOT NULL
	AND version < $1 AND NOT (key = ANY($4::bytea[]))`

// pointSQL gives each key of $2 its final value from $3 (NULL: cleared) at
// version $1: the key's newest row is superseded (the WITH runs though the
// INSERT does not read it) and, unless the key is cleared, a new row holds
// the value. The newest rows are found with the keys as an array condition,
// which takes the index whatever the statistics say: as a join with the
// keys, PostgreSQL hashed every newest row of the table when its statistics
// were behind (4–18 ms a commit under the lock at 2,000 actors, growing with
// the table).
const pointSQL = `
WITH old AS (
	UPDATE udb_kv k SET superseded_at = $1
	WHERE k.key = ANY($2::bytea[]) AND k.superseded_at IS NULL)
INSERT INTO udb_kv (key, version, value)
SELECT w.key, $1, w.value FROM unnest($2::bytea[], $3::bytea[]) AS w(key, value)
WHERE w.value IS NOT NULL`

// writeLogSQL records a group's write ranges ($1, $2; an end NULL is the
// single key $1), disjoint and not adjacent, at its version $3: appended
// rows only, which no later commit changes.
const writeLogSQL = `
INSERT INTO udb_write_log (key, version, end_key) SELECT b, $3, e FROM unnest($1::bytea[], $2::bytea[]) AS r(b, e)`

// Pruning at horizon $1, after the commit that set it: rows superseded at
// or below it, and the write ranges recorded at or below it, which no
// admissible read version is checked against. Earlier versions of this
// driver also wrote a row with value NULL for each cleared key;
// pruneClearsSQL removes those a store still holds once they are below the
// horizon. Commits run meanwhile (startPrune).
const (
	pruneSupersededSQL = `DELETE FROM udb_kv WHERE superseded_at <= $1`
	pruneClearsSQL     = `DELETE FROM udb_kv WHERE value IS NULL AND superseded_at IS NULL AND version <= $1`
	pruneWriteLogSQL   = `DELETE FROM udb_write_log WHERE version <= $1`
	pruneHorizonSQL    = `UPDATE udb_meta SET horizon = $1 WHERE id = 1 AND horizon < $1`
)

// pruneLockTimeout bounds how long a pruning statement waits for a row a
// commit holds (DB.pruneLockTimeout; tests change it). A commit may in turn
// wait for a row the statement deleted; giving up long before PostgreSQL
// looks for deadlocks (deadlock_timeout, 1 s by default) means such a cycle
// fails the prune, never the commit.
const pruneLockTimeout = "50ms"

// commitMayHaveApplied reports whether a failed COMMIT leaves the outcome
// unknown: anything but an ERROR reported by the server, which rolled the
// transaction back (a lost connection, a FATAL termination).
func commitMayHaveApplied(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) || pgErr.Severity != "ERROR"
}

// keyTooLarge reports PostgreSQL refusing a key longer than its btree
// indexes take (about 2,700 bytes once compressed): see the package doc.
func keyTooLarge(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "54000"
}

func isCode(err error) bool {
	var e udb.Error
	return errors.As(err, &e)
}

// pruneDue reports whether this process's commit should raise the horizon
// and prune: at most every pruneEvery, and not while a prune is running.
func (db *DB) pruneDue() bool {
	db.prune.Lock()
	defer db.prune.Unlock()
	if db.prune.running || time.Since(db.prune.last) < pruneEvery {
		return false
	}
	db.prune.last = time.Now()
	return true
}

// startPrune deletes, in the background, the history below horizon h that a
// commit has just set. With 20,000 actors that took 60–150 ms a second,
// which inside the commit held the lock that serialises every commit
// (docs/udb.md). Each statement is a transaction of its own, so that the
// rows it deletes are locked only while it runs; a failed prune leaves its
// rows to the next one.
func (db *DB) startPrune(h int64) {
	db.prune.Lock()
	defer db.prune.Unlock()
	if db.prune.running || db.prune.closed {
		return
	}
	db.prune.running = true
	db.prune.wg.Go(func() {
		err := db.pool.withConn(db.ctx, func(c *pgx.Conn) error { return db.pruneOn(c, h) })
		var pgErr *pgconn.PgError
		switch {
		case err == nil, db.ctx.Err() != nil:
		case errors.As(err, &pgErr) && pgErr.Code == "55P03": // lock_not_available: see pruneLockTimeout
			slog.Debug("udb: pruning gave way to a commit", "component", "udb/postgres", "err", err)
		default:
			slog.Warn("udb: pruning old history", "component", "udb/postgres", "err", err)
		}
		db.prune.Lock()
		db.prune.running = false
		db.prune.Unlock()
	})
}

// pruneOn runs the pruning statements at horizon h on c, then vacuums the
// write log once writeLogVacuumRows of its rows were deleted.
func (db *DB) pruneOn(c *pgx.Conn, h int64) error {
	b := &pgx.Batch{}
	for _, sql := range []string{pruneSupersededSQL, pruneClearsSQL, pruneWriteLogSQL} {
		b.Queue("BEGIN")
		// Pruning visits a large share of udb_kv's history: the planner chooses
		// (Open turns sequential scans off for the other statements). The write
		// log's oldest second is a small share of it, found by the version index.
		if sql != pruneWriteLogSQL {
			b.Queue(`SET LOCAL enable_seqscan = on`)
		}
		b.Queue(`SELECT set_config('lock_timeout', $1, true)`, db.pruneLockTimeout)
		q := b.Queue(sql, h)
		if sql == pruneWriteLogSQL {
			q.Exec(func(tag pgconn.CommandTag) error {
				db.prune.logDeleted += tag.RowsAffected()
				return nil
			})
		}
		b.Queue("COMMIT")
	}
	if err := c.SendBatch(db.ctx, b).Close(); err != nil {
		return err
	}
	if db.prune.logDeleted < writeLogVacuumRows {
		return nil
	}
	// SKIP_LOCKED: an autovacuum of the table running meanwhile does it. A
	// role that does not own the table gets a warning and no vacuum.
	if _, err := c.Exec(db.ctx, `VACUUM (SKIP_LOCKED) udb_write_log`); err != nil {
		return err
	}
	db.prune.logDeleted = 0
	return nil
}

// writeLogVacuumRows is how many write-log rows pruning deletes before it
// vacuums the table itself. A deleted row stays in udb_write_log's primary
// key until a vacuum, and a commit's conflict check of a range read walks
// every entry of the range, dead or alive: with autovacuum alone (a minute
// apart at best, and not before a new database's first minute) creates on
// PostgreSQL stalled for 10–30 s with 140,000 dead rows (docs/udb.md).
const writeLogVacuumRows = 20_000

// waitPruned waits until the prune started last has finished.
func (db *DB) waitPruned() { db.prune.wg.Wait() }

// folded is a transaction's effect: cleared ranges (applied first, to the
// keys not in keys) and the final value of each key it wrote (nil: absent).
type folded struct {
	clears []txn.KeyRange
	keys   [][]byte
	values [][]byte
}

// pending is one key's value while mutations fold.
type pending struct {
	key     []byte
	value   []byte
	present bool
}

// atomicKeys are the keys whose stored value atomic operations read.
func atomicKeys(muts []txn.Mutation) [][]byte {
	var need [][]byte
	for _, m := range muts {
		if m.Op == txn.OpAtomic && udb.IsAtomicOp(m.Atomic) {
			need = append(need, nonNil(m.Key))
		}
	}
	return need
}

// stamped is one transaction's mutations with its versionstamp.
type stamped struct {
	muts  []txn.Mutation
	stamp [10]byte
}

// fold applies the mutations of the transactions in order over the newest
// stored values of the atomic operations' keys (stored holds the present
// ones). A range clear makes keys in it absent for the operations after it.
func fold(txns []stamped, stored map[string][]byte) folded {
	keys := btree.NewBTreeGOptions(func(a, b *pending) bool { return bytes.Compare(a.key, b.key) < 0 }, btree.Options{NoLocks: true})
	var clears []txn.KeyRange
	cleared := func(k []byte) bool {
		for _, r := range clears {
			if bytes.Compare(k, r.Begin) >= 0 && bytes.Compare(k, r.End) < 0 {
				return true
			}
		}
		return false
	}
	put := func(k, v []byte, present bool) {
		keys.Set(&pending{key: k, value: v, present: present})
	}
	for _, t := range txns {
		for _, m := range t.muts {
			switch m.Op {
			case txn.OpSet:
				put(m.Key, m.Value, true)
			case txn.OpClear:
				put(m.Key, nil, false)
			case txn.OpClearRange:
				keys.Ascend(&pending{key: m.Key}, func(p *pending) bool {
					if bytes.Compare(p.key, m.Value) >= 0 {
						return false
					}
					p.value, p.present = nil, false
					return true
				})
				clears = append(clears, txn.KeyRange{Begin: m.Key, End: m.Value})
			case txn.OpAtomic:
				switch m.Atomic {
				case udb.MutationSetVersionstampedKey:
					put(stampedKey(m.Key, t.stamp), m.Value, true)
					continue
				case udb.MutationSetVersionstampedValue:
					put(m.Key, stampedKey(m.Value, t.stamp), true)
					continue
				}
				var cur []byte
				present := false
				if p, ok := keys.Get(&pending{key: m.Key}); ok {
					cur, present = p.value, p.present
				} else if !cleared(m.Key) {
					cur, present = stored[string(m.Key)]
				}
				v, keep := udb.ApplyAtomic(m.Atomic, cur, present, m.Value)
				put(m.Key, v, keep)
			}
		}
	}

	f := folded{clears: mergeRanges(clears)}
	keys.Scan(func(p *pending) bool {
		f.keys = append(f.keys, nonNil(p.key))
		if p.present {
			f.values = append(f.values, nonNil(p.value))
		} else {
			f.values = append(f.values, nil)
		}
		return true
	})
	if f.keys == nil {
		f.keys = [][]byte{} // an empty array, not NULL, for clearSQL's exclusion
	}
	return f
}

// mergeRanges sorts ranges and merges those that overlap or touch, dropping
// empty ones.
func mergeRanges(rs []txn.KeyRange) []txn.KeyRange {
	out := make([]txn.KeyRange, 0, len(rs))
	for _, r := range rs {
		if bytes.Compare(r.Begin, r.End) < 0 {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b txn.KeyRange) int { return bytes.Compare(a.Begin, b.Begin) })
	n := 0
	for _, r := range out {
		if n > 0 && bytes.Compare(r.Begin, out[n-1].End) <= 0 {
			if bytes.Compare(r.End, out[n-1].End) > 0 {
				out[n-1].End = r.End
			}
			continue
		}
		out[n] = r
		n++
	}
	return out[:n]
}

// isSingleKey reports whether r holds one key only: [k, k+"\x00").
func isSingleKey(r txn.KeyRange) bool {
	return len(r.End) == len(r.Begin)+1 && r.End[len(r.Begin)] == 0 && bytes.HasPrefix(r.End, r.Begin)
}

func splitRanges(rs []txn.KeyRange) (begins, ends [][]byte) {
	begins, ends = make([][]byte, len(rs)), make([][]byte, len(rs))
	for i, r := range rs {
		begins[i], ends[i] = nonNil(r.Begin), nonNil(r.End)
	}
	return begins, ends
}

// logRanges are write ranges as writeLogSQL records them: a range of one key
// has no end.
func logRanges(rs []txn.KeyRange) (begins, ends [][]byte) {
	begins, ends = splitRanges(rs)
	for i, r := range rs {
		if isSingleKey(r) {
			ends[i] = nil
		}
	}
	return begins, ends
}

// stampOf is a versionstamp: the commit version and the transaction's index
// among those its group committed at that version.
func stampOf(version int64, index int) [10]byte {
	var s [10]byte
	binary.BigEndian.PutUint64(s[:8], uint64(version))
	binary.BigEndian.PutUint16(s[8:], uint16(index))
	return s
}

// stampedKey replaces the placeholder named by the trailing offset; the
// transaction checked the offset when the operation was issued.
func stampedKey(operand []byte, stamp [10]byte) []byte {
	body := operand[:len(operand)-4]
	pos := int(binary.LittleEndian.Uint32(operand[len(operand)-4:]))
	out := append([]byte(nil), body...)
	copy(out[pos:pos+10], stamp[:])
	return out
}
