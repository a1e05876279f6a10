package udbtest

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

// Section D: the retry loop, OnError, options and error conditions.
func retryCases() []testCase {
	return []testCase{
		{"32_TransactRetriesConflict", testTransactRetries},
		{"33_TransactNonUDBError", testTransactNonUDBError},
		{"34_OnError", testOnError},
		{"35_RetryLimit", testRetryLimit},
		{"36_Timeout", testTimeout},
		{"37_TransactionTooOld", testTooOld},
		{"38_CommitUnknownResult", testCommitUnknownResult},
		{"39_UsedDuringCommit", testUsedDuringCommit},
	}
}

// conflictingWrite commits, from inside a transaction body, a write of key by
// another transaction, so the body's earlier read of key conflicts. It returns
// a non-udb error on failure so the retry loop stops.
func (e *env) conflictingWrite(key []byte, value string) error {
	other, err := e.db.CreateTransaction()
	if err != nil {
		return fmt.Errorf("concurrent writer: CreateTransaction: %v", err)
	}
	defer other.Cancel()
	other.Set(key, []byte(value))
	if err := other.Commit(e.ctx); err != nil {
		return fmt.Errorf("concurrent writer: Commit: %v", err) // %v: not retryable
	}
	return nil
}

// 32. Transact retries not_committed: the body conflicts on its first run and
// commits on its second, returning that run's value.
func testTransactRetries(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	runs := 0
	v, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		runs++
		val, err := tx.Get(e.ctx, e.k("k"))
		if err != nil {
			return nil, err
		}
		if runs == 1 {
			if err := e.conflictingWrite(e.k("k"), "other"); err != nil {
				return nil, err
			}
		}
		tx.Set(e.k("copy"), append(bytes.Clone(val), '!'))
		return runs, nil
	})
	if !expectOK(t, "Transact", err) {
		return
	}
	if runs != 2 {
		t.Errorf("Transact ran the body %d times, want 2 (one conflict, one success)", runs)
	}
	if v != 2 {
		t.Errorf("Transact returned %v, want the second run's value 2", v)
	}
	e.expectValue("copy written by the successful run", e.read(e.k("copy")), []byte("other!"))

	// ReadTransact returns the body's value.
	v, err = e.db.ReadTransact(e.ctx, func(r udb.ReadTransaction) (any, error) {
		return r.Get(e.ctx, e.k("k"))
	})
	if expectOK(t, "ReadTransact", err) {
		if b, _ := v.([]byte); !bytes.Equal(b, []byte("other")) {
			t.Errorf("ReadTransact returned %v, want %q", v, "other")
		}
	}
}

// 33. A body error that is not a udb error ends Transact at once, without a
// commit; a non-retryable udb error also ends it.
func testTransactNonUDBError(t *testing.T, h Harness) {
	e := newEnv(t, h)
	sentinel := errors.New("udbtest: body failed")
	runs := 0
	_, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		runs++
		tx.Set(e.k("k"), []byte("must not commit"))
		return nil, sentinel
	})
	if !errors.Is(err, sentinel) {
		t.Errorf("Transact: got error %v, want the body's error", err)
	}
	if runs != 1 {
		t.Errorf("Transact ran the body %d times, want 1", runs)
	}
	e.expectValue("key set by the failed body", e.read(e.k("k")), nil)

	runs = 0
	_, err = e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		runs++
		tx.Set(e.k("k2"), []byte("must not commit"))
		return nil, udb.Error{Code: udb.CodeKeyOutsideLegalRange}
	})
	expectCode(t, "Transact with a non-retryable udb error", err, udb.CodeKeyOutsideLegalRange)
	if runs != 1 {
		t.Errorf("Transact ran the body %d times for a non-retryable error, want 1", runs)
	}
	e.expectValue("key set by the failed body", e.read(e.k("k2")), nil)

	runs = 0
	_, err = e.db.ReadTransact(e.ctx, func(r udb.ReadTransaction) (any, error) {
		runs++
		return nil, sentinel
	})
	if !errors.Is(err, sentinel) || runs != 1 {
		t.Errorf("ReadTransact: got error %v after %d runs, want the body's error after 1", err, runs)
	}
}

// 34. OnError with a retryable error resets the transaction (writes dropped,
// a fresh read version) and returns nil; other errors come back unchanged
// and leave the transaction cancelled.
func testOnError(t *testing.T, h Harness) {
	e := newEnv(t, h)
	tx := e.tx()
	rv1 := e.grv(tx)
	tx.Set(e.k("lost"), []byte("x"))
	bump := e.tx()
	bump.Set(e.k("bump"), []byte("1"))
	e.commit(bump)
	cv, _ := bump.GetCommittedVersion()

	if !expectOK(t, "OnError(not_committed)", tx.OnError(e.ctx, udb.Error{Code: udb.CodeNotCommitted})) {
		return
	}
	e.expectValue("Get of a key written before OnError", e.get(tx, e.k("lost")), nil)
	if rv2 := e.grv(tx); rv2 < cv || rv2 <= rv1 {
		t.Errorf("read version after OnError: got %d, want a new one >= %d (the last commit)", rv2, cv)
	}
	e.expectValue("Get after OnError sees the newer commit", e.get(tx, e.k("bump")), []byte("1"))
	tx.Set(e.k("kept"), []byte("y"))
	e.commit(tx)
	e.expectRows("subspace", e.contents(), pair{"bump", "1"}, pair{"kept", "y"})

	for _, code := range []int{udb.CodeNotCommitted, udb.CodeCommitUnknownResult, udb.CodeTransactionTooOld,
		udb.CodeFutureVersion, udb.CodeDatabaseLocked, udb.CodeProcessBehind} {
		tx := e.tx()
		expectOK(t, "OnError("+codeName(code)+")", tx.OnError(e.ctx, udb.Error{Code: code}))
	}
	for _, code := range []int{udb.CodeTimedOut, udb.CodeTransactionCancelled, udb.CodeTransactionTimedOut,
		udb.CodeKeyOutsideLegalRange, udb.CodeTransactionTooLarge, udb.CodeUsedDuringCommit} {
		tx := e.tx()
		err := tx.OnError(e.ctx, udb.Error{Code: code})
		if expectCode(t, "OnError("+codeName(code)+")", err, code) {
			// FoundationDB cancels a transaction whose OnError failed.
			_, err := tx.Get(e.ctx, e.k("x"))
			expectCode(t, "Get after OnError("+codeName(code)+") failed", err, udb.CodeTransactionCancelled)
		}
	}

	boom := errors.New("udbtest: not a udb error")
	tx3 := e.tx()
	if err := tx3.OnError(e.ctx, boom); !errors.Is(err, boom) {
		t.Errorf("OnError(non-udb error): got %v, want the same error back", err)
	}
}

// 35. With SetRetryLimit(n), OnError retries n times and then returns the
// error it was given.
func testRetryLimit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	tx := e.tx()
	if err := tx.Options().SetRetryLimit(2); err != nil {
		t.Fatalf("SetRetryLimit: %v", err)
	}
	conflict := udb.Error{Code: udb.CodeNotCommitted}
	expectOK(t, "OnError retry 1 of 2", tx.OnError(e.ctx, conflict))
	expectOK(t, "OnError retry 2 of 2", tx.OnError(e.ctx, conflict))
	expectCode(t, "OnError past the retry limit", tx.OnError(e.ctx, conflict), udb.CodeNotCommitted)

	tx0 := e.tx()
	if err := tx0.Options().SetRetryLimit(0); err != nil {
		t.Fatalf("SetRetryLimit(0): %v", err)
	}
	expectCode(t, "OnError with retry limit 0", tx0.OnError(e.ctx, udb.Error{Code: udb.CodeTransactionTooOld}),
		udb.CodeTransactionTooOld)

	// Through Transact: a body that always conflicts runs 1 + limit times.
	e.set(pair{"k", "v0"})
	runs := 0
	_, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		runs++
		if err := tx.Options().SetRetryLimit(2); err != nil {
			return nil, fmt.Errorf("SetRetryLimit: %v", err)
		}
		if _, err := tx.Get(e.ctx, e.k("k")); err != nil {
			return nil, err
		}
		if err := e.conflictingWrite(e.k("k"), fmt.Sprint(runs)); err != nil {
			return nil, err
		}
		tx.Set(e.k("never"), []byte("x"))
		return nil, nil
	})
	expectCode(t, "Transact with a body that always conflicts", err, udb.CodeNotCommitted)
	if runs != 3 {
		t.Errorf("Transact ran the body %d times with retry limit 2, want 3", runs)
	}
	e.expectValue("key of the never-committed body", e.read(e.k("never")), nil)
}

// 36. SetTimeout makes operations fail with transaction_timed_out (1031)
// once the transaction is older than the timeout, retries included; OnError
// does not retry it.
func testTimeout(t *testing.T, h Harness) {
	e := newEnv(t, h)
	const timeout = 300 * time.Millisecond
	created := time.Now()
	tx := e.tx()
	if err := tx.Options().SetTimeout(timeout); err != nil {
		t.Fatalf("SetTimeout: %v", err)
	}
	tx.Set(e.k("k"), []byte("v"))
	var err error
	for {
		if _, err = tx.Get(e.ctx, e.k("probe")); err != nil {
			break
		}
		if time.Since(created) > waitTimeout {
			t.Fatalf("no error %v after the %v timeout", time.Since(created), timeout)
		}
		time.Sleep(10 * time.Millisecond) // polling for a deadline; not synchronisation
	}
	if expectCode(t, "Get after the timeout", err, udb.CodeTransactionTimedOut) {
		if el := time.Since(created); el < timeout {
			t.Errorf("transaction timed out after %v, before its %v timeout", el, timeout)
		}
	}
	expectCode(t, "Commit after the timeout", tx.Commit(e.ctx), udb.CodeTransactionTimedOut)
	expectCode(t, "OnError(transaction_timed_out)", tx.OnError(e.ctx, udb.Error{Code: udb.CodeTransactionTimedOut}),
		udb.CodeTransactionTimedOut)
	e.expectValue("key written by the timed-out transaction", e.read(e.k("k")), nil)

	// The timeout bounds the whole retry loop.
	e.set(pair{"c", "0"})
	runs := 0
	start := time.Now()
	_, err = e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
		runs++
		if err := tx.Options().SetTimeout(200 * time.Millisecond); err != nil {
			return nil, fmt.Errorf("SetTimeout: %v", err)
		}
		if time.Since(start) > waitTimeout {
			return nil, errors.New("udbtest: retried past the timeout")
		}
		if _, err := tx.Get(e.ctx, e.k("c")); err != nil {
			return nil, err
		}
		if err := e.conflictingWrite(e.k("c"), fmt.Sprint(runs)); err != nil {
			return nil, err
		}
		tx.Set(e.k("never"), []byte("x"))
		return nil, nil
	})
	expectCode(t, "Transact whose body always conflicts, with a 200 ms timeout", err, udb.CodeTransactionTimedOut)
}

// 37. A transaction whose read version fell out of the MVCC window fails
// reads and commits (with reads) with transaction_too_old (1007); OnError
// retries it.
func testTooOld(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	reader := e.tx()
	e.grv(reader)
	writer := e.tx()
	e.grv(writer)
	e.get(writer, e.k("k")) // a read conflict range: old blind writes may still commit
	writer.Set(e.k("w"), []byte("x"))

	if clk, ok := e.db.(udb.Clock); ok {
		clk.AdvanceVersions(udb.MVCCWindowVersions + 1)
	} else if testing.Short() {
		t.Skip("driver has no udb.Clock; the real-time variant takes 6 s and is skipped with -short")
	} else {
		time.Sleep(6 * time.Second) // the MVCC window is about 5 s of real time
	}

	_, err := reader.Get(e.ctx, e.k("fresh"))
	expectCode(t, "Get after the read version left the MVCC window", err, udb.CodeTransactionTooOld)
	expectCode(t, "Commit with reads after the read version left the MVCC window", writer.Commit(e.ctx),
		udb.CodeTransactionTooOld)
	e.expectValue("key written by the too-old transaction", e.read(e.k("w")), nil)

	if expectOK(t, "OnError(transaction_too_old)", reader.OnError(e.ctx, udb.Error{Code: udb.CodeTransactionTooOld})) {
		e.expectValue("Get after OnError", e.get(reader, e.k("k")), []byte("v0"))
		reader.Set(e.k("w"), []byte("retried"))
		e.commit(reader)
		e.expectValue("key written after the retry", e.read(e.k("w")), []byte("retried"))
	}
}

// 38. commit_unknown_result (1021): Transact retries, and a body guarded by
// an idempotency marker applies its effect exactly once whether or not the
// failed commit was applied.
func testCommitUnknownResult(t *testing.T, h Harness) {
	e := newEnv(t, h)
	fi, ok := e.db.(udb.FaultInjector)
	if !ok {
		t.Skip("driver has no udb.FaultInjector")
	}
	for _, applied := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			e := e.sub(t)
			marker, counter := e.k("marker/", fmt.Sprint(applied)), e.k("counter/", fmt.Sprint(applied))
			fi.InjectCommitError(udb.CodeCommitUnknownResult, applied)
			runs := 0
			v, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
				runs++
				m, err := tx.Get(e.ctx, marker)
				if err != nil {
					return nil, err
				}
				if m != nil {
					return "already applied", nil
				}
				tx.Set(marker, []byte("done"))
				tx.Atomic(udb.MutationAdd, counter, le64(1))
				return "applied now", nil
			})
			if !expectOK(t, "Transact", err) {
				return
			}
			if runs != 2 {
				t.Errorf("Transact ran the body %d times, want 2 (commit_unknown_result, then a retry)", runs)
			}
			want := map[bool]string{true: "already applied", false: "applied now"}[applied]
			if v != want {
				t.Errorf("Transact returned %v, want %q", v, want)
			}
			e.expectValue("counter", e.read(counter), le64(1))
			e.expectValue("marker", e.read(marker), []byte("done"))
		})
	}
}

// 39. FoundationDB fails every operation issued on a transaction once its
// commit has started, until Reset or OnError, with used_during_commit (2017).
// The commit stays "started" after Commit returns, which makes the check
// deterministic: issuing an operation after Commit is exactly an operation
// issued while the commit is outstanding, as far as the transaction knows.
func testUsedDuringCommit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	tx := e.tx()
	tx.Set(e.k("k"), []byte("v"))
	e.commit(tx)
	_, err := tx.Get(e.ctx, e.k("k"))
	expectCode(t, "Get after a successful Commit", err, udb.CodeUsedDuringCommit)
	tx.Set(e.k("k"), []byte("again"))
	expectCode(t, "Commit again after Set on a committed transaction", tx.Commit(e.ctx), udb.CodeUsedDuringCommit)
	e.expectValue("k", e.read(e.k("k")), []byte("v"))

	tx.Reset()
	e.expectValue("Get after Reset", e.get(tx, e.k("k")), []byte("v"))
	tx.Set(e.k("k2"), []byte("after reset"))
	e.commit(tx)
	e.expectValue("k2", e.read(e.k("k2")), []byte("after reset"))

	// Also after a failed commit.
	t1, t2 := e.pair2()
	e.get(t1, e.k("k"))
	e.writeAndCommit(t2, "k", "t2")
	t1.Set(e.k("t1"), []byte("x"))
	e.expectConflict("T1 commit", t1)
	_, err = t1.Get(e.ctx, e.k("k"))
	expectCode(t, "Get after a failed Commit", err, udb.CodeUsedDuringCommit)
}
