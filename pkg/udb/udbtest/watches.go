package udbtest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section F: watches. Every wait has a deadline, so a broken driver fails
// instead of hanging; "has not fired" is checked with a short deadline.
func watchCases() []testCase {
	return []testCase{
		{"49_WatchFiresOnChange", testWatchFires},
		{"50_WatchInactiveBeforeCommit", testWatchBeforeCommit},
		{"51_WatchGetsCommitError", testWatchCommitError},
		{"52_WatchCancel", testWatchCancel},
		{"53_WatchLimit", testWatchLimit},
	}
}

// expectFired waits for w to fire.
func (e *env) expectFired(what string, w udb.Watch) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	if err := w.Wait(ctx); err != nil {
		e.t.Errorf("%s: watch Wait: %v, want it to fire", what, err)
	}
}

// expectNotFired checks that w has not fired (nor failed) yet.
func (e *env) expectNotFired(what string, w udb.Watch) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, notYet)
	defer cancel()
	if err := w.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			err = errors.New("it fired")
		}
		e.t.Errorf("%s: watch Wait: %v, want it still pending", what, err)
	}
}

// expectWatchCode waits for w to fail with code.
func (e *env) expectWatchCode(what string, w udb.Watch, code int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	expectCode(e.t, what, w.Wait(ctx), code)
}

// watchCommitted creates a watch on key in a transaction and commits it.
func (e *env) watchCommitted(key []byte) udb.Watch {
	e.t.Helper()
	tx := e.tx()
	w := tx.Watch(key)
	e.t.Cleanup(w.Cancel)
	e.commit(tx)
	return w
}

// 49. A committed watch fires when another transaction changes the value,
// including creating or clearing the key; rewriting the same value does not
// fire it. The watch outlives its transaction.
func testWatchFires(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"}, pair{"gone", "x"})

	// Created inside Transact, whose transaction is cancelled after commit.
	v, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		return tx.Watch(e.k("k")), nil
	})
	if err != nil {
		t.Fatalf("Transact: %v", err)
	}
	w := v.(udb.Watch)
	t.Cleanup(w.Cancel)
	e.expectNotFired("watch before any change", w)
	e.set(pair{"k", "v0"})
	e.expectNotFired("watch after rewriting the same value", w)
	e.set(pair{"k", "v1"})
	e.expectFired("watch after the value changed", w)
	e.expectFired("second Wait on a fired watch", w)

	wNew := e.watchCommitted(e.k("absent"))
	e.expectNotFired("watch on an absent key", wNew)
	e.set(pair{"absent", ""}) // present-empty differs from absent
	e.expectFired("watch after an absent key was created empty", wNew)

	wGone := e.watchCommitted(e.k("gone"))
	tx := e.tx()
	tx.Clear(e.k("gone"))
	e.commit(tx)
	e.expectFired("watch after its key was cleared", wGone)

	wRange := e.watchCommitted(e.k("r/5"))
	tx = e.tx()
	tx.Set(e.k("r/5"), []byte("x"))
	e.commit(tx)
	e.expectFired("watch after its key was set", wRange)
	wRange2 := e.watchCommitted(e.k("r/5"))
	tx = e.tx()
	tx.ClearRange(e.k("r/"), e.k("r0"))
	e.commit(tx)
	e.expectFired("watch after a ClearRange covering its key", wRange2)
}

// 50. A watch is armed only when its transaction commits: a change committed
// by another transaction before that does not fire it, but it compares with
// the value its transaction saw, so it fires right after the commit.
func testWatchBeforeCommit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"}, pair{"own", "v0"})

	t1 := e.tx()
	e.grv(t1)
	w := t1.Watch(e.k("k"))
	t.Cleanup(w.Cancel)
	e.set(pair{"k", "v1"})
	e.expectNotFired("watch of an uncommitted transaction after another commit changed its key", w)
	e.commit(t1) // read-only
	e.expectFired("watch after its transaction committed (value differs from what it saw)", w)

	// The value a watch compares with includes its transaction's own write.
	t2 := e.tx()
	t2.Set(e.k("own"), []byte("mine"))
	w2 := t2.Watch(e.k("own"))
	t.Cleanup(w2.Cancel)
	e.commit(t2)
	e.expectNotFired("watch whose own transaction wrote the value it watches", w2)
	e.set(pair{"own", "other"})
	e.expectFired("watch after another transaction changed the value", w2)
}

// 51. A watch whose transaction fails to commit gets the commit's error; a
// watch whose transaction is reset before commit gets transaction_cancelled.
// The watch's read is serializable: it adds a read conflict on its key.
func testWatchCommitError(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})

	t1, t2 := e.pair2()
	e.get(t1, e.k("k"))
	w := t1.Watch(e.k("k"))
	t.Cleanup(w.Cancel)
	t1.Set(e.k("other"), []byte("t1"))
	e.writeAndCommit(t2, "k", "v1")
	e.expectConflict("T1 commit", t1)
	e.expectWatchCode("watch of a transaction that failed with not_committed", w, udb.CodeNotCommitted)

	t3 := e.tx()
	w3 := t3.Watch(e.k("k"))
	t.Cleanup(w3.Cancel)
	t3.Reset()
	e.expectWatchCode("watch of a transaction reset before commit", w3, udb.CodeTransactionCancelled)

	t.Run("WatchAddsReadConflict", func(t *testing.T) {
		e := e.sub(t)
		t4, t5 := e.pair2()
		w4 := t4.Watch(e.k("k"))
		t.Cleanup(w4.Cancel)
		t4.Set(e.k("other"), []byte("t4"))
		e.writeAndCommit(t5, "k", "v2")
		e.expectConflict("T4 commit: its watch read k, which T5 then wrote", t4)
		e.expectWatchCode("watch of the failed transaction", w4, udb.CodeNotCommitted)
	})
}

// 52. Cancel makes Wait return operation_cancelled (1101), before or after
// the commit; cancelling does not fail the commit.
func testWatchCancel(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	w := e.watchCommitted(e.k("k"))
	w.Cancel()
	e.expectWatchCode("Wait on a watch cancelled after commit", w, udb.CodeOperationCancelled)
	e.set(pair{"k", "v1"})
	e.expectWatchCode("Wait on a cancelled watch after its key changed", w, udb.CodeOperationCancelled)

	tx := e.tx()
	w2 := tx.Watch(e.k("k"))
	w2.Cancel()
	tx.Set(e.k("x"), []byte("x"))
	e.commit(tx)
	e.expectWatchCode("Wait on a watch cancelled before commit", w2, udb.CodeOperationCancelled)
	e.expectValue("write of the transaction whose watch was cancelled", e.read(e.k("x")), []byte("x"))
}

// 53. A database allows a limited number of outstanding watches: past it the
// transaction still commits and the watch fails with too_many_watches
// (1032). Fired and cancelled watches free their slot.
func testWatchLimit(t *testing.T, h Harness) {
	if h.OpenWithMaxWatches == nil {
		t.Skip("harness has no OpenWithMaxWatches")
	}
	const limit = 3
	e := newEnvDB(t, h.OpenWithMaxWatches(t, limit))
	var ws []udb.Watch
	for i := range limit {
		ws = append(ws, e.watchCommitted(e.k(fmt.Sprint("w", i))))
	}
	for i, w := range ws {
		e.expectNotFired(fmt.Sprintf("watch %d of %d", i+1, limit), w)
	}

	tx := e.tx()
	tx.Set(e.k("x"), []byte("x"))
	over := tx.Watch(e.k("over"))
	t.Cleanup(over.Cancel)
	expectOK(t, "Commit of a transaction whose watch is past the limit", tx.Commit(e.ctx))
	e.expectWatchCode(fmt.Sprintf("watch %d with a limit of %d", limit+1, limit), over, udb.CodeTooManyWatches)
	e.expectValue("write of that transaction", e.read(e.k("x")), []byte("x"))

	// A fired watch frees its slot.
	e.set(pair{"w0", "changed"})
	e.expectFired("watch 1 after its key changed", ws[0])
	w5 := e.watchCommitted(e.k("w5"))
	e.expectNotFired("new watch after one fired", w5)

	// A cancelled watch frees its slot.
	ws[1].Cancel()
	e.expectWatchCode("cancelled watch 2", ws[1], udb.CodeOperationCancelled)
	w6 := e.watchCommitted(e.k("w6"))
	e.expectNotFired("new watch after one was cancelled", w6)

	// The limit still holds.
	w7 := e.watchCommitted(e.k("w7"))
	e.expectWatchCode("watch past the limit again", w7, udb.CodeTooManyWatches)

	e.set(pair{"w5", "x"}, pair{"w6", "x"})
	e.expectFired("watch w5", w5)
	e.expectFired("watch w6", w6)
}
