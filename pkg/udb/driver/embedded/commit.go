package embedded

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

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
		<-p.done
		return p.res, p.err
	}
}

// commitLoop is the single committer: it takes every queued transaction,
// resolves them in order, applies the survivors in one batch with one sync,
// then publishes and acknowledges them.
func (db *DB) commitLoop() {
	defer close(db.stopped)
	group := make([]*pendingCommit, 0, db.maxGroup)
	for {
		group = group[:0]
		select {
		case p := <-db.commits:
			group = append(group, p)
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
		db.commitGroup(group)
	}
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

// commitGroup commits a group at one version, as a FoundationDB commit batch
// does: the transactions that pass resolution share the version and are
// ordered by their batch index, the last two bytes of their versionstamps.
func (db *DB) commitGroup(group []*pendingCommit) {
	db.mu.Lock()
	db.mu.inflight = true
	base := max(db.mu.version, db.clock.now(), db.lastCV)
	db.mu.version = base
	db.mu.Unlock()
	cv := base + 1

	// Atomic operations read through the batch to see the group's earlier
	// writes; only then is the (costlier) indexed batch needed.
	var batch *pebble.Batch
	if groupHasAtomics(group) {
		batch = db.pdb.NewIndexedBatch()
	} else {
		batch = db.pdb.NewBatch()
	}
	defer batch.Close()
	var accepted []*pendingCommit
	for _, p := range group {
		p.stamp = stampOf(cv, len(accepted))
		if p.err = db.resolve(p, cv); p.err == nil {
			accepted = append(accepted, p)
		}
	}
	err := db.write(batch, accepted, cv)
	if err != nil {
		// Nothing of the group is durable; fail it whole. The resolver has
		// recorded its writes, which costs at most false conflicts.
		for _, p := range accepted {
			p.err = err
		}
		accepted = nil
	}
	if len(accepted) > 0 {
		db.lastCV = cv
		db.publish(cv)
		db.notifyWatches(accepted)
	} else {
		db.mu.Lock()
		db.mu.inflight = false
		db.mu.Unlock()
	}
	db.resolver.forget(cv - udb.MVCCWindowVersions)
	for _, p := range group {
		if p.err == nil && p.failAfterApply != nil {
			p.err = p.failAfterApply
		}
		if p.err == nil {
			p.res = txn.CommitResult{Version: cv, Versionstamp: p.stamp}
		}
		close(p.done)
	}
}

// write applies the accepted transactions in order and syncs the batch.
func (db *DB) write(batch *pebble.Batch, accepted []*pendingCommit, cv int64) error {
	if len(accepted) == 0 {
		return nil
	}
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
	if err := batch.Commit(db.writeOpts); err != nil {
		return fmt.Errorf("embedded: commit: %w", err)
	}
	return nil
}

func groupHasAtomics(group []*pendingCommit) bool {
	for _, p := range group {
		for _, m := range p.req.Mutations {
			if m.Op == txn.OpAtomic && udb.IsAtomicOp(m.Atomic) {
				return true
			}
		}
	}
	return false
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
			err = b.DeleteRange(m.Key, m.Value, nil)
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
