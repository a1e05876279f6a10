package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/internal/txn"
	"github.com/cockroachdb/pebble/v2"
)

// pendingCommit is one transaction waiting in the commit queue.
type pendingCommit struct {
	req  *txn.CommitRequest
	done chan struct{}
	res  txn.CommitResult
	err  error

	// Set by the committer.
	stamp          [10]byte // commit version and batch index
	failAfterApply error    // an injected error reported after applying
}

var errClosed = errors.New("embedded: database is closed")

func (db *DB) commit(ctx context.Context, req *txn.CommitRequest) (txn.CommitResult, error) {
	p := &pendingCommit{req: req, done: make(chan struct{})}
	select {
	case db.commits <- p:
	case <-db.stop:
		return txn.CommitResult{}, errClosed
	case <-ctx.Done():
		return txn.CommitResult{}, ctx.Err()
	}
	// Once queued the commit runs to the end: report its outcome even if
	// ctx ends, since the caller cannot know whether it applied otherwise.
	select {
	case <-p.done:
		return p.res, p.err
	case <-db.stopped:
		// Every group taken is finished before stopped closes; a commit
		// still unfinished was queued after the committer's last look and
		// never applied.
		select {
		case <-p.done:
			return p.res, p.err
		default:
			return txn.CommitResult{}, errClosed
		}
	}
}

// A commit group goes through two stages, so that the CPU work of one group
// overlaps the fsync of the one before:
//
//  1. commitLoop (the single committer) takes every queued transaction,
//     resolves them in order, writes the survivors into one pebble batch and
//     applies it without waiting for the sync. Pebble makes the batch visible
//     at once, so the next group's atomic operations see it, and the
//     committer takes the snapshot of exactly this group's state.
//  2. syncLoop waits for the group's sync, then publishes its snapshot as the
//     newest read version and acknowledges its transactions, in group order.
//     When no other commit waits and no earlier group is in flight, the
//     committer does stage 2 itself: there is nothing to overlap.
//
// Nothing is visible to transactions before stage 2 publishes it.
type appliedGroup struct {
	group []*pendingCommit
	// The rest is set when some transaction of the group was applied.
	accepted []*pendingCommit
	batch    *pebble.Batch
	snap     *pebble.Snapshot
	cv       int64
}

// pipelineDepth bounds the groups applied but not yet synced.
const pipelineDepth = 2

// idleForgetInterval is how often the committer forgets old conflict history while no
// commits come (see resolver.forget).
const idleForgetInterval = time.Second

func (db *DB) commitLoop() {
	applied := make(chan *appliedGroup, pipelineDepth)
	go db.syncLoop(applied)
	defer close(applied)
	idle := time.NewTicker(idleForgetInterval)
	defer idle.Stop()
	for {
		var group []*pendingCommit
		select {
		case p := <-db.commits:
			group = append(make([]*pendingCommit, 0, 16), p)
		case <-idle.C:
			// Commits forget the conflict history that left the window; with none coming,
			// the last burst's would otherwise stay in memory until the next commit.
			db.resolver.forget(db.clock.now() - udb.MVCCWindowVersions)
			continue
		case <-db.stop:
			db.failQueued()
			return
		}
	fill:
		for len(group) < db.maxGroup {
			select {
			case p := <-db.commits:
				group = append(group, p)
			default:
				break fill
			}
		}
		g := db.applyGroup(group)
		if len(db.commits) == 0 && db.onlyGroupInFlight() {
			// Nothing to overlap with: finish here and save two goroutine
			// hand-offs on the latency of a lone commit.
			db.finishGroup(g)
			continue
		}
		applied <- g
	}
}

// onlyGroupInFlight reports whether the group just applied is the only one
// not yet published, so finishing it here keeps groups in order.
func (db *DB) onlyGroupInFlight() bool {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.mu.inflight == 1
}

func (db *DB) failQueued() {
	for {
		select {
		case p := <-db.commits:
			p.err = errClosed
			close(p.done)
		default:
			return
		}
	}
}

// applyGroup is stage 1. The group commits at one version, as a
// FoundationDB commit batch does: the transactions that pass resolution
// share the version and are ordered by their batch index, the last two bytes
// of their versionstamps.
func (db *DB) applyGroup(group []*pendingCommit) *appliedGroup {
	g := &appliedGroup{group: group}
	db.mu.Lock()
	if db.mu.inflight == 0 {
		// Only while nothing is unpublished may the read version move up
		// over the published snapshot: no commit lies between them.
		db.mu.version = max(db.mu.version, db.clock.now())
	}
	db.mu.inflight++
	// Above every read version handed out and every earlier group, and
	// following the clock even under continuous load.
	cv := max(db.mu.version, db.lastCV, db.clock.now()) + 1
	broken := db.mu.broken
	db.mu.Unlock()
	defer db.resolver.forget(cv - udb.MVCCWindowVersions)

	var accepted []*pendingCommit
	for _, p := range group {
		if broken != nil {
			p.err = broken
			continue
		}
		p.stamp = stampOf(cv, len(accepted))
		if p.err = db.resolve(p, cv); p.err == nil {
			accepted = append(accepted, p)
		}
	}
	if len(accepted) == 0 {
		return g
	}
	// Atomic operations and range clears read through the batch to see the
	// group's earlier writes; only then is the (costlier) indexed batch needed.
	var batch *pebble.Batch
	if groupReads(accepted) {
		batch = db.pdb.NewIndexedBatch()
	} else {
		batch = db.pdb.NewBatch()
	}
	if err := db.write(batch, accepted, cv); err != nil {
		// Nothing of the group is applied; fail it whole. The resolver has
		// recorded its writes, which costs at most false conflicts.
		_ = batch.Close()
		for _, p := range accepted {
			p.err = err
		}
		return g
	}
	db.lastCV = cv
	g.accepted, g.batch, g.snap, g.cv = accepted, batch, db.pdb.NewSnapshot(), cv
	return g
}

// syncLoop is stage 2; it ends when commitLoop closes applied.
func (db *DB) syncLoop(applied <-chan *appliedGroup) {
	defer close(db.stopped)
	for g := range applied {
		db.finishGroup(g)
	}
}

// finishGroup syncs and publishes an applied group, then acknowledges it.
func (db *DB) finishGroup(g *appliedGroup) {
	if g.batch != nil {
		db.syncGroup(g)
	}
	db.mu.Lock()
	db.mu.inflight--
	db.mu.Unlock()
	for _, p := range g.group {
		if p.err == nil && p.failAfterApply != nil {
			p.err = p.failAfterApply
		}
		if p.err == nil {
			p.res = txn.CommitResult{Version: g.cv, Versionstamp: p.stamp}
		}
		close(p.done)
	}
}

func (db *DB) syncGroup(g *appliedGroup) {
	err := g.batch.SyncWait()
	_ = g.batch.Close()
	if err != nil {
		// The group is visible in pebble but not durable: the store no longer
		// matches what was acknowledged, so refuse every later commit.
		err = fmt.Errorf("embedded: sync failed, the database refuses further commits: %w", err)
		slog.Error(err.Error(), "component", "udb/embedded")
		db.mu.Lock()
		db.mu.broken = err
		db.mu.Unlock()
		_ = g.snap.Close()
		for _, p := range g.accepted {
			p.err = err
		}
		return
	}
	db.publish(g.snap, g.cv)
	db.notifyWatches(g.accepted)
}

// write fills the batch with the accepted transactions, in order, and applies
// it; with sync on, syncGroup waits for the sync.
func (db *DB) write(batch *pebble.Batch, accepted []*pendingCommit, cv int64) error {
	for _, p := range accepted {
		if err := db.apply(batch, p); err != nil {
			return err
		}
	}
	var vb [8]byte
	binary.BigEndian.PutUint64(vb[:], uint64(cv))
	if err := batch.Set(versionKey, vb[:], nil); err != nil {
		return fmt.Errorf("embedded: commit: %w", err)
	}
	var err error
	if db.writeOpts.Sync {
		err = db.pdb.ApplyNoSyncWait(batch, db.writeOpts)
	} else {
		err = db.pdb.Apply(batch, db.writeOpts)
	}
	if err != nil {
		return fmt.Errorf("embedded: commit: %w", err)
	}
	return nil
}

// groupReads reports whether applying the group reads stored values.
func groupReads(group []*pendingCommit) bool {
	for _, p := range group {
		for _, m := range p.req.Mutations {
			if m.Op == txn.OpClearRange || (m.Op == txn.OpAtomic && udb.IsAtomicOp(m.Atomic)) {
				return true
			}
		}
	}
	return false
}

// smallClear is how many keys a range clear deletes one by one before it
// becomes a pebble range deletion. Range tombstones make every later read
// that crosses them slower (pebble fragments and consults them on each
// seek), and berth clears many small ranges, such as chunked metadata.
const smallClear = 16

// clearRange deletes the keys in [begin, end): one by one when there are
// few, else with a range deletion.
func clearRange(b *pebble.Batch, begin, end []byte) error {
	lower := begin
	if len(lower) == 0 {
		// The empty key as a non-nil bound: pebble's invariant checks (on in
		// race builds) index its first byte. nil means the same, unbounded.
		lower = nil
	}
	it, err := b.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: end})
	if err != nil {
		return err
	}
	var found [][]byte
	for ok := it.First(); ok && len(found) <= smallClear; ok = it.Next() {
		found = append(found, append([]byte(nil), it.Key()...))
	}
	if err := it.Close(); err != nil {
		return err
	}
	if len(found) > smallClear {
		return b.DeleteRange(begin, end, nil)
	}
	for _, k := range found {
		if err := b.Delete(k, nil); err != nil {
			return err
		}
	}
	return nil
}

// resolve checks p against commits after its read version and, if it may
// commit at cv, records its writes in the resolver.
func (db *DB) resolve(p *pendingCommit, cv int64) error {
	db.inject.Lock()
	code, applied := db.inject.code, db.inject.applied
	db.inject.code = 0
	db.inject.Unlock()
	if code != 0 {
		if !applied {
			return udb.Error{Code: code}
		}
		p.failAfterApply = udb.Error{Code: code}
	}
	req := p.req
	if cv-req.ReadVersion > udb.MVCCWindowVersions {
		return udb.Error{Code: udb.CodeTransactionTooOld}
	}
	if db.resolver.conflicts(req.ReadVersion, req.ReadConflicts) {
		return udb.Error{Code: udb.CodeNotCommitted}
	}
	writes := req.WriteConflicts
	for _, m := range req.Mutations {
		if m.Op == txn.OpAtomic && m.Atomic == udb.MutationSetVersionstampedKey && !m.NoWriteConflict {
			k := stampedKey(m.Key, p.stamp)
			writes = append(writes, txn.KeyRange{Begin: k, End: udb.KeyAfter(k)})
		}
	}
	db.resolver.write(cv, writes)
	return nil
}

// stampOf is a versionstamp: the commit version and the batch index.
func stampOf(version int64, index int) [10]byte {
	var s [10]byte
	binary.BigEndian.PutUint64(s[:8], uint64(version))
	binary.BigEndian.PutUint16(s[8:], uint16(index))
	return s
}

// stampedKey replaces the placeholder named by the trailing offset.
func stampedKey(operand []byte, stamp [10]byte) []byte {
	body := operand[:len(operand)-4]
	pos := int(binary.LittleEndian.Uint32(operand[len(operand)-4:]))
	out := append([]byte(nil), body...)
	copy(out[pos:pos+10], stamp[:])
	return out
}

// apply writes p's mutations into the group's batch, in order. Atomic
// operations read the latest value: the store plus earlier writes of the
// group, which the indexed batch shows.
func (db *DB) apply(b *pebble.Batch, p *pendingCommit) error {
	stamp := p.stamp
	for _, m := range p.req.Mutations {
		var err error
		switch m.Op {
		case txn.OpSet:
			err = b.Set(m.Key, m.Value, nil)
		case txn.OpClear:
			err = b.Delete(m.Key, nil)
		case txn.OpClearRange:
			err = clearRange(b, m.Key, m.Value)
		case txn.OpAtomic:
			err = db.applyAtomic(b, m, stamp)
		}
		if err != nil {
			return fmt.Errorf("embedded: apply: %w", err)
		}
	}
	return nil
}

func (db *DB) applyAtomic(b *pebble.Batch, m txn.Mutation, stamp [10]byte) error {
	switch m.Atomic {
	case udb.MutationSetVersionstampedKey:
		return b.Set(stampedKey(m.Key, stamp), m.Value, nil)
	case udb.MutationSetVersionstampedValue:
		return b.Set(m.Key, stampedKey(m.Value, stamp), nil)
	}
	cur, closer, err := b.Get(m.Key)
	present := err == nil
	if err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return err
	}
	v, keep := udb.ApplyAtomic(m.Atomic, cur, present, m.Value)
	if closer != nil {
		_ = closer.Close()
	}
	if !keep {
		if present {
			return b.Delete(m.Key, nil)
		}
		return nil
	}
	return b.Set(m.Key, v, nil)
}

// mutatedKeyRange is the span of keys a mutation can change, for watches.
func mutatedKeyRange(m txn.Mutation, stamp [10]byte) (begin, end []byte) {
	switch {
	case m.Op == txn.OpClearRange:
		return m.Key, m.Value
	case m.Op == txn.OpAtomic && m.Atomic == udb.MutationSetVersionstampedKey:
		k := stampedKey(m.Key, stamp)
		return k, udb.KeyAfter(k)
	}
	return m.Key, udb.KeyAfter(m.Key)
}
