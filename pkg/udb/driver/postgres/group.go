package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/jackc/pgx/v5"
)

// Commits of one process share PostgreSQL transactions, as FoundationDB's
// commit proxies batch theirs: every commit holds the udb_meta lock, so one
// transaction per commit caps a store at one lock hold per commit (about a
// millisecond: two round trips and the writes), whoever commits. A commit
// that finds none in flight runs at once, alone; those arriving meanwhile
// queue, and the next group takes them all (up to maxGroup, maxGroupBytes).
// The group commits at one version: each transaction is checked against the
// store's writes after its read version and against the writes of the
// group's earlier transactions, and those that pass are ordered by their
// batch index, the last two bytes of their versionstamps.
const (
	maxGroup      = 128
	maxGroupBytes = 8 << 20
)

// pendingCommit is a commit waiting for its group.
type pendingCommit struct {
	req  *txn.CommitRequest
	size int // bytes of its mutations

	done chan struct{} // closed once res and err are set
	res  txn.CommitResult
	err  error
}

// commitQueue holds the commits waiting while a group is in flight.
type commitQueue struct {
	sync.Mutex
	queue   []*pendingCommit
	running bool // a group is in flight

	shared atomic.Int64 // commits that went in a group of several
}

func (db *DB) commit(ctx context.Context, req *txn.CommitRequest) (txn.CommitResult, error) {
	if db.ctx.Err() != nil {
		return txn.CommitResult{}, errPoolClosed
	}
	p := &pendingCommit{req: req, size: mutationBytes(req.Mutations), done: make(chan struct{})}
	db.commits.Lock()
	if db.commits.running {
		db.commits.queue = append(db.commits.queue, p)
		db.commits.Unlock()
		// Once queued the commit runs to the end: its outcome is reported even
		// if ctx ends, since the caller could not know otherwise whether it
		// applied. The group is bounded by queryTimeout.
		<-p.done
		return p.res, p.err
	}
	db.commits.running = true
	db.commits.Unlock()
	db.commitGroup(ctx, []*pendingCommit{p})
	db.nextGroups()
	return p.res, p.err
}

// nextGroups hands the queued commits, if any, to a goroutine that commits
// them in groups until none is left.
func (db *DB) nextGroups() {
	if group := db.takeGroup(); group != nil {
		go func() {
			for ; group != nil; group = db.takeGroup() {
				ctx, cancel := context.WithTimeout(db.ctx, queryTimeout)
				db.commitGroup(ctx, group)
				cancel()
			}
		}()
	}
}

// takeGroup takes the next group from the queue, or marks the queue idle.
func (db *DB) takeGroup() []*pendingCommit {
	db.commits.Lock()
	defer db.commits.Unlock()
	n, size := 0, 0
	for n < len(db.commits.queue) && n < maxGroup && (n == 0 || size+db.commits.queue[n].size <= maxGroupBytes) {
		size += db.commits.queue[n].size
		n++
	}
	if n == 0 {
		db.commits.running = false
		return nil
	}
	group := slices.Clone(db.commits.queue[:n])
	if n > 1 {
		db.commits.shared.Add(int64(n))
	}
	db.commits.queue = slices.Delete(db.commits.queue, 0, n)
	return group
}

func mutationBytes(muts []txn.Mutation) int {
	n := 0
	for _, m := range muts {
		n += len(m.Key) + len(m.Value)
	}
	return n
}

// commitGroup commits group and reports each commit's outcome. Should the
// shared transaction fail before COMMIT could have applied it, for a reason
// that may be one commit's (a key PostgreSQL refuses), each commit of a group
// of several is tried again alone, so that the others do not fail with it.
func (db *DB) commitGroup(ctx context.Context, group []*pendingCommit) {
	defer func() {
		for _, p := range group {
			close(p.done)
		}
	}()
	err := db.commitGroupConn(ctx, group)
	if err == nil {
		return
	}
	if len(group) > 1 && !isCommitUnknown(err) && db.ctx.Err() == nil {
		for _, p := range group {
			p.res, p.err = txn.CommitResult{}, nil
			if err := db.commitGroupConn(ctx, []*pendingCommit{p}); err != nil {
				p.err = err
			}
		}
		return
	}
	for _, p := range group {
		p.res, p.err = txn.CommitResult{}, err
	}
}

// commitGroupConn runs group's transaction on a pooled connection. A nil
// error leaves each commit's outcome in it; an error is the whole group's.
func (db *DB) commitGroupConn(ctx context.Context, group []*pendingCommit) error {
	c, err := db.pool.acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: commit: %w", err)
	}
	sentCommit, err := db.commitOn(ctx, c, group)
	// The pool also closes a connection left inside a transaction.
	db.pool.release(c, connBroken(err) && !isCode(err))
	switch {
	case err == nil:
		for _, p := range group {
			if p.err == nil && len(p.req.Watches) > 0 {
				db.watches.arm(p.req.Watches)
			}
		}
		return nil
	case isCode(err):
		return err
	case keyTooLarge(err):
		return fmt.Errorf("postgres: commit: %w: %w", udb.Error{Code: udb.CodeKeyTooLarge}, err)
	case sentCommit && commitMayHaveApplied(err):
		// COMMIT may or may not have reached the server.
		return fmt.Errorf("postgres: commit: %w: %w", udb.Error{Code: udb.CodeCommitUnknownResult}, err)
	default:
		return fmt.Errorf("postgres: commit: %w", err)
	}
}

func isCommitUnknown(err error) bool {
	var e udb.Error
	return errors.As(err, &e) && e.Code == udb.CodeCommitUnknownResult
}

// commitOn runs group's transaction on c, setting each commit's outcome.
// sentCommit reports that the batch ending with COMMIT was sent, after which
// a lost connection leaves the outcome unknown.
func (db *DB) commitOn(ctx context.Context, c *pgx.Conn, group []*pendingCommit) (sentCommit bool, err error) {
	if _, err := c.Exec(ctx, "BEGIN ISOLATION LEVEL READ COMMITTED"); err != nil {
		return false, err
	}
	defer func() { // a failure the server saw, or one of ours, leaves c usable once rolled back
		if (err != nil && (isCode(err) || !connBroken(err)) || err == nil && !sentCommit) && c.PgConn().TxStatus() != 'I' {
			rctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
			_, _ = c.Exec(rctx, "ROLLBACK")
			cancel()
		}
	}()

	// The lock, then the reads that need it, in one round trip: each
	// commit's conflict check and the newest values atomic operations need.
	var last, horizon, now int64
	var format int
	reads := &pgx.Batch{}
	reads.Queue(lockSQL, db.advanced.Load()).QueryRow(func(row pgx.Row) error {
		return row.Scan(&last, &horizon, &format, &now)
	})
	conflict := make([]bool, len(group))
	var need [][]byte
	for i, p := range group {
		if len(p.req.ReadConflicts) > 0 {
			bs, es := splitRanges(p.req.ReadConflicts)
			reads.Queue(conflictSQL, p.req.ReadVersion, bs, es).QueryRow(func(row pgx.Row) error {
				return row.Scan(&conflict[i])
			})
		}
		need = append(need, atomicKeys(p.req.Mutations)...)
	}
	stored := map[string][]byte{} // the present ones among atomic operations' keys
	if len(need) > 0 {
		reads.Queue(newestSQL, need).Query(func(rows pgx.Rows) error { return scanNewest(rows, stored) })
	}
	if err := c.SendBatch(ctx, reads).Close(); err != nil {
		return false, err
	}
	if format != schemaFormat {
		return false, fmt.Errorf("postgres: commit: %w", formatError(format))
	}

	cv := max(last+1, now)
	code, applied := db.takeInjected()
	var (
		txns    []stamped
		writes  []txn.KeyRange
		written rangeSet // the writes of the group's accepted commits
	)
	for i, p := range group {
		req := p.req
		switch {
		case req.ReadVersion < horizon || cv-req.ReadVersion > udb.MVCCWindowVersions:
			p.err = udb.Error{Code: udb.CodeTransactionTooOld}
			continue
		case conflict[i] || written.overlaps(req.ReadConflicts):
			p.err = udb.Error{Code: udb.CodeNotCommitted}
			continue
		case code != 0 && !applied:
			p.err, code = udb.Error{Code: code}, 0
			continue
		case code != 0:
			p.err, code = udb.Error{Code: code}, 0 // injected after applying
		}
		stamp := stampOf(cv, len(txns))
		w := writeRanges(req, stamp)
		written.add(w)
		writes = append(writes, w...)
		txns = append(txns, stamped{req.Mutations, stamp})
		if p.err == nil {
			p.res = txn.CommitResult{Version: cv, Versionstamp: stamp}
		}
	}
	if len(txns) == 0 {
		return false, nil
	}

	b := &pgx.Batch{}
	db.queueWrites(b, cv, fold(txns, stored), mergeRanges(writes))
	h := cv - udb.MVCCWindowVersions
	prune := h > horizon && db.pruneDue()
	if prune {
		b.Queue(pruneHorizonSQL, h)
	}
	b.Queue(`SELECT pg_notify($1, $2)`, notifyChannel, strconv.FormatInt(cv, 10))
	b.Queue("COMMIT")
	if db.beforeCommit != nil {
		db.beforeCommit(c)
	}
	if err := c.SendBatch(ctx, b).Close(); err != nil {
		return true, err
	}
	if prune {
		db.startPrune(h)
	}
	return true, nil
}

// writeRanges are a commit's write conflict ranges, with the keys its
// versionstamped-key operations write.
func writeRanges(req *txn.CommitRequest, stamp [10]byte) []txn.KeyRange {
	writes := slices.Clip(req.WriteConflicts)
	for _, m := range req.Mutations {
		if m.Op == txn.OpAtomic && m.Atomic == udb.MutationSetVersionstampedKey && !m.NoWriteConflict {
			k := stampedKey(m.Key, stamp)
			writes = append(writes, txn.KeyRange{Begin: k, End: udb.KeyAfter(k)})
		}
	}
	return writes
}

// queueWrites queues the statements that write a group's effect w at
// version cv, with its merged write ranges, and the new last version.
func (db *DB) queueWrites(b *pgx.Batch, cv int64, w folded, writes []txn.KeyRange) {
	for _, r := range w.clears {
		b.Queue(clearSQL, cv, nonNil(r.Begin), nonNil(r.End), w.keys)
	}
	if len(w.keys) > 0 {
		b.Queue(pointSQL, cv, w.keys, w.values)
	}
	if len(writes) > 0 {
		begins, ends := logRanges(writes)
		b.Queue(writeLogSQL, begins, ends, cv)
	}
	b.Queue(`UPDATE udb_meta SET version = $1 WHERE id = 1`, cv)
}

// rangeSet is a set of keys as sorted, disjoint ranges.
type rangeSet struct{ rs []txn.KeyRange }

// add adds the ranges rs.
func (s *rangeSet) add(rs []txn.KeyRange) {
	if len(rs) > 0 {
		s.rs = mergeRanges(append(s.rs, rs...))
	}
}

// overlaps reports whether any of rs shares a key with the set.
func (s *rangeSet) overlaps(rs []txn.KeyRange) bool {
	for _, r := range rs {
		if bytes.Compare(r.Begin, r.End) >= 0 {
			continue
		}
		// The last range beginning before r's end holds one of r's keys if it
		// ends after r's begin.
		i, _ := slices.BinarySearchFunc(s.rs, r.End, func(x txn.KeyRange, end []byte) int { return bytes.Compare(x.Begin, end) })
		if i > 0 && bytes.Compare(s.rs[i-1].End, r.Begin) > 0 {
			return true
		}
	}
	return false
}
