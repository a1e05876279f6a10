package udbtest

import (
	"bytes"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section A: basics, read-your-writes, argument validation and size limits.
func basicsCases() []testCase {
	return []testCase{
		{"01_AbsentVsEmpty", testAbsentVsEmpty},
		{"02_SetGetClear", testSetGetClear},
		{"03_ClearRange", testClearRange},
		{"04_EmptyKey", testEmptyKey},
		{"05_InvertedRange", testInvertedRange},
		{"06_KeyAndValueSize", testKeyAndValueSize},
		{"07_TransactionSize", testTransactionSize},
		{"08_SystemKeys", testSystemKeys},
	}
}

// 1. Get returns nil for an absent key and a non-nil empty slice for a key
// present with an empty value, both in the transaction and after commit.
func testAbsentVsEmpty(t *testing.T, h Harness) {
	e := newEnv(t, h)
	tx := e.tx()
	tx.Set(e.k("empty"), []byte{})
	tx.Set(e.k("nilvalue"), nil) // a nil value is the empty value
	e.expectValue("in-txn Get of a key set to empty", e.get(tx, e.k("empty")), []byte{})
	e.expectValue("in-txn Get of a key set to nil", e.get(tx, e.k("nilvalue")), []byte{})
	e.expectValue("in-txn Get of an absent key", e.get(tx, e.k("absent")), nil)
	e.commit(tx)

	e.expectValue("Get of a key committed empty", e.read(e.k("empty")), []byte{})
	e.expectValue("Get of a key committed with a nil value", e.read(e.k("nilvalue")), []byte{})
	e.expectValue("Get of an absent key", e.read(e.k("absent")), nil)
	got := e.contents()
	if len(got) != 2 {
		t.Errorf("range over the subspace: got %s, want the two empty-valued keys", e.rows(got))
	}
	for _, kv := range got {
		if len(kv.Value) != 0 {
			t.Errorf("range row %s: got value %q, want empty", e.strip(kv.Key), kv.Value)
		}
	}
}

// 2. Set, Get and Clear are visible in the transaction and after commit.
func testSetGetClear(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"gone", "old"}, pair{"kept", "old"})

	tx := e.tx()
	tx.Set(e.k("new"), []byte("v1"))
	e.expectValue("in-txn Get after Set", e.get(tx, e.k("new")), []byte("v1"))
	tx.Set(e.k("new"), []byte("v2"))
	e.expectValue("in-txn Get after a second Set", e.get(tx, e.k("new")), []byte("v2"))
	e.expectValue("in-txn Get of a committed key", e.get(tx, e.k("kept")), []byte("old"))
	tx.Clear(e.k("gone"))
	e.expectValue("in-txn Get after Clear", e.get(tx, e.k("gone")), nil)
	tx.Set(e.k("temp"), []byte("t"))
	tx.Clear(e.k("temp"))
	e.expectValue("in-txn Get after Set then Clear", e.get(tx, e.k("temp")), nil)
	e.commit(tx)

	e.expectRows("subspace after commit", e.contents(), pair{"kept", "old"}, pair{"new", "v2"})

	// A second transaction sees the first one's commit.
	tx2 := e.tx()
	e.expectValue("Get in a later transaction", e.get(tx2, e.k("new")), []byte("v2"))
	tx2.Clear(e.k("new"))
	e.commit(tx2)
	e.expectValue("Get after a committed Clear", e.read(e.k("new")), nil)
}

// 3. ClearRange clears [begin, end): end is exclusive; a key set after the
// ClearRange in the same transaction reappears.
func testClearRange(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"a", "1"}, pair{"b", "2"}, pair{"b\x00", "2x"}, pair{"c", "3"}, pair{"d", "4"})

	tx := e.tx()
	tx.ClearRange(e.k("b"), e.k("d"))
	tx.ClearRange(e.k("a"), e.k("a")) // empty range: no effect
	e.expectRows("in-txn range after ClearRange(b, d)", e.rngKeys(tx, e.k(), e.k("\xff"), udb.RangeOptions{}),
		pair{"a", "1"}, pair{"d", "4"})
	tx.Set(e.k("c"), []byte("new"))
	e.expectValue("in-txn Get of a key set after ClearRange", e.get(tx, e.k("c")), []byte("new"))
	e.expectRows("in-txn range after Set inside the cleared range",
		e.rngKeys(tx, e.k(), e.k("\xff"), udb.RangeOptions{}),
		pair{"a", "1"}, pair{"c", "new"}, pair{"d", "4"})
	e.commit(tx)
	e.expectRows("subspace after commit", e.contents(), pair{"a", "1"}, pair{"c", "new"}, pair{"d", "4"})
}

// 4. The empty key is a valid key. The case writes the database's first key,
// outside the subspace, and restores its previous value afterwards.
func testEmptyKey(t *testing.T, h Harness) {
	e := newEnv(t, h)
	empty := []byte{}

	// Remember the current value of "" so a shared database is left as found.
	before := e.read(empty)
	t.Cleanup(func() {
		ctx, cancel := cleanupContext()
		defer cancel()
		tx := newTx(t, e.db)
		if before == nil {
			tx.Clear(empty)
		} else {
			tx.Set(empty, before)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Errorf("restoring the empty key: %v", err)
		}
	})

	marker := e.k("marker") // unique value
	tx := e.tx()
	tx.Set(empty, marker)
	e.expectValue("in-txn Get of the empty key", e.get(tx, empty), marker)
	e.commit(tx)

	tx2 := e.tx()
	e.expectValue("Get of the empty key after commit", e.get(tx2, empty), marker)
	if k := e.getKey(tx2, udb.FirstGreaterOrEqual(empty)); len(k) != 0 {
		t.Errorf("GetKey(FirstGreaterOrEqual(\"\")): got %q, want the empty key", k)
	}
	kvs := e.rng(tx2, udb.FirstGreaterOrEqual(empty), udb.FirstGreaterThan(empty), udb.RangeOptions{})
	if len(kvs) != 1 || len(kvs[0].Key) != 0 || !bytes.Equal(kvs[0].Value, marker) {
		t.Errorf("GetRange over [\"\", keyAfter(\"\")): got %d rows %v, want the empty key with the marker", len(kvs), kvs)
	}
	tx2.Clear(empty)
	e.commit(tx2)
	e.expectValue("Get of the empty key after Clear", e.read(empty), nil)
}

// 5. An inverted ClearRange fails with inverted_range (2005), deferred to the
// next read or Commit; inverted conflict ranges fail at once.
func testInvertedRange(t *testing.T, h Harness) {
	e := newEnv(t, h)

	t.Run("ClearRangeDeferredToCommit", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.ClearRange(e.k("b"), e.k("a"))
		expectCode(t, "Commit after an inverted ClearRange", tx.Commit(e.ctx), udb.CodeInvertedRange)
	})
	t.Run("ClearRangeDeferredToRead", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Set(e.k("x"), []byte("x"))
		tx.ClearRange(e.k("b"), e.k("a"))
		_, err := tx.Get(e.ctx, e.k("x"))
		expectCode(t, "Get after an inverted ClearRange", err, udb.CodeInvertedRange)
		expectCode(t, "Commit after an inverted ClearRange", tx.Commit(e.ctx), udb.CodeInvertedRange)
		e.expectValue("key set in the failed transaction", e.read(e.k("x")), nil)
	})
	t.Run("ConflictRanges", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		expectCode(t, "AddReadConflictRange(b, a)", tx.AddReadConflictRange(e.k("b"), e.k("a")), udb.CodeInvertedRange)
		tx2 := e.tx()
		expectCode(t, "AddWriteConflictRange(b, a)", tx2.AddWriteConflictRange(e.k("b"), e.k("a")), udb.CodeInvertedRange)
		tx3 := e.tx()
		expectOK(t, "AddReadConflictRange(a, a)", tx3.AddReadConflictRange(e.k("a"), e.k("a")))
		expectOK(t, "AddWriteConflictRange(a, a)", tx3.AddWriteConflictRange(e.k("a"), e.k("a")))
		expectOK(t, "Commit with empty conflict ranges", tx3.Commit(e.ctx))
	})
}

// 6. Keys up to 10,000 bytes and values up to 100,000 bytes are accepted;
// one byte more fails with key_too_large (2102) or value_too_large (2103).
// Set does not fail: the error is deferred to the next read or Commit.
func testKeyAndValueSize(t *testing.T, h Harness) {
	e := newEnv(t, h)
	maxKey := pad(e.k("maxkey/"), udb.MaxKeySize-h.KeyOverhead)
	bigKey := pad(e.k("bigkey/"), udb.MaxKeySize+1-h.KeyOverhead)
	maxValue := bytes.Repeat([]byte{'v'}, udb.MaxValueSize)
	bigValue := bytes.Repeat([]byte{'v'}, udb.MaxValueSize+1)

	t.Run("AtLimit", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Set(maxKey, maxValue)
		e.commit(tx)
		if got := e.read(maxKey); !bytes.Equal(got, maxValue) {
			t.Errorf("Get of a %d-byte key: got a %d-byte value, want %d bytes", len(maxKey), len(got), len(maxValue))
		}
	})
	t.Run("KeyTooLargeAtCommit", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Set(bigKey, []byte("v"))
		expectCode(t, "Commit after Set of a 10,001-byte key", tx.Commit(e.ctx), udb.CodeKeyTooLarge)
	})
	t.Run("KeyTooLargeAtNextRead", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Set(e.k("ok"), []byte("v"))
		tx.Set(bigKey, []byte("v"))
		_, err := tx.Get(e.ctx, e.k("ok"))
		expectCode(t, "Get after Set of a 10,001-byte key", err, udb.CodeKeyTooLarge)
		_, err = tx.GetRange(udb.FirstGreaterOrEqual(e.k()), udb.FirstGreaterOrEqual(e.k("\xff")), udb.RangeOptions{}).All(e.ctx)
		expectCode(t, "GetRange after Set of a 10,001-byte key", err, udb.CodeKeyTooLarge)
		expectCode(t, "Commit after Set of a 10,001-byte key", tx.Commit(e.ctx), udb.CodeKeyTooLarge)
		e.expectValue("key set in the failed transaction", e.read(e.k("ok")), nil)
	})
	t.Run("ValueTooLarge", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Set(e.k("bigvalue"), bigValue)
		_, err := tx.Get(e.ctx, e.k("other"))
		expectCode(t, "Get after Set of a 100,001-byte value", err, udb.CodeValueTooLarge)
		expectCode(t, "Commit after Set of a 100,001-byte value", tx.Commit(e.ctx), udb.CodeValueTooLarge)
	})
	t.Run("AtomicSizes", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		tx.Atomic(udb.MutationAdd, bigKey, le64(1))
		expectCode(t, "Commit after an atomic op on a 10,001-byte key", tx.Commit(e.ctx), udb.CodeKeyTooLarge)
		tx2 := e.tx()
		tx2.Atomic(udb.MutationAppendIfFits, e.k("app"), bigValue)
		expectCode(t, "Commit after an atomic op with a 100,001-byte operand", tx2.Commit(e.ctx), udb.CodeValueTooLarge)
	})
	t.Run("OversizedReadsAndClears", func(t *testing.T) {
		e := e.sub(t)
		// No stored key is longer than the limit, so FoundationDB answers a
		// Get of one as absent and ignores a Clear of one, without error.
		tx := e.tx()
		v, err := tx.Get(e.ctx, bigKey)
		if expectOK(t, "Get of a 10,001-byte key", err) && v != nil {
			t.Errorf("Get of a 10,001-byte key: got %q, want absent", v)
		}
		tx.Clear(bigKey)
		tx.Set(e.k("after"), []byte("v"))
		expectOK(t, "Commit after Clear of a 10,001-byte key", tx.Commit(e.ctx))
	})
}

// 7. A transaction whose writes exceed 10,000,000 bytes fails at commit with
// transaction_too_large (2101); SetSizeLimit lowers the limit.
func testTransactionSize(t *testing.T, h Harness) {
	e := newEnv(t, h)
	value := bytes.Repeat([]byte{'v'}, udb.MaxValueSize)

	t.Run("UnderLimit", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		for i := range 90 { // 9,000,000 bytes of values
			tx.Set(e.k("under/", string(rune('A'+i/26)), string(rune('a'+i%26))), value)
		}
		e.commit(tx)
	})
	t.Run("OverLimit", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		for i := range 101 { // 10,100,000 bytes of values
			tx.Set(e.k("over/", string(rune('A'+i/26)), string(rune('a'+i%26))), value)
		}
		expectCode(t, "Commit of a 10.1 MB transaction", tx.Commit(e.ctx), udb.CodeTransactionTooLarge)
		tx2 := e.tx()
		b, end := udb.PrefixRange(e.k("over/"))
		if kvs := e.rngKeys(tx2, b, end, udb.RangeOptions{Limit: 1}); len(kvs) != 0 {
			t.Errorf("a transaction that failed with transaction_too_large left rows behind: %s", e.rows(kvs))
		}
	})
	t.Run("SizeLimitOption", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		expectOK(t, "SetSizeLimit(1000)", tx.Options().SetSizeLimit(1000))
		tx.Set(e.k("sized"), bytes.Repeat([]byte{'v'}, 2000))
		expectCode(t, "Commit of 2,000 bytes with SetSizeLimit(1000)", tx.Commit(e.ctx), udb.CodeTransactionTooLarge)
	})
}

// 8. Keys at or past "\xff" fail with key_outside_legal_range (2004) unless
// system keys are enabled: reads at once, writes deferred to the next read or
// Commit.
func testSystemKeys(t *testing.T, h Harness) {
	e := newEnv(t, h)
	sysKey := append([]byte("\xff/udbtest/"), e.prefix[len(e.prefix)-16:]...)

	t.Run("Rejected", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		_, err := tx.Get(e.ctx, []byte("\xff"))
		expectCode(t, `Get("\xff")`, err, udb.CodeKeyOutsideLegalRange)
		_, err = tx.Get(e.ctx, sysKey)
		expectCode(t, "Get of a system key", err, udb.CodeKeyOutsideLegalRange)
		_, err = tx.GetRange(udb.FirstGreaterOrEqual(e.k()), udb.FirstGreaterOrEqual([]byte("\xff\x00")), udb.RangeOptions{}).All(e.ctx)
		expectCode(t, `GetRange ending at "\xff\x00"`, err, udb.CodeKeyOutsideLegalRange)

		tx2 := e.tx()
		tx2.Set(sysKey, []byte("v"))
		expectCode(t, "Commit after Set of a system key", tx2.Commit(e.ctx), udb.CodeKeyOutsideLegalRange)

		tx3 := e.tx()
		tx3.Set(e.k("x"), []byte("v"))
		tx3.Set([]byte("\xff"), []byte("v"))
		_, err = tx3.Get(e.ctx, e.k("x"))
		expectCode(t, `Get after Set("\xff")`, err, udb.CodeKeyOutsideLegalRange)
		expectCode(t, `Commit after Set("\xff")`, tx3.Commit(e.ctx), udb.CodeKeyOutsideLegalRange)

		tx4 := e.tx()
		tx4.ClearRange(e.k(), []byte("\xff\x00"))
		expectCode(t, `Commit after ClearRange ending at "\xff\x00"`, tx4.Commit(e.ctx), udb.CodeKeyOutsideLegalRange)
	})
	t.Run("ReadSystemKeys", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		expectOK(t, "SetReadSystemKeys", tx.Options().SetReadSystemKeys())
		_, err := tx.Get(e.ctx, sysKey)
		expectOK(t, "Get of a system key with read_system_keys", err)
		tx.Set(sysKey, []byte("v"))
		expectCode(t, "Commit after Set of a system key with only read_system_keys", tx.Commit(e.ctx), udb.CodeKeyOutsideLegalRange)
	})
	t.Run("AccessSystemKeys", func(t *testing.T) {
		e := e.sub(t)
		bigSys := pad(sysKey, udb.MaxKeySize+1) // system keys may be up to 30,000 bytes
		if h.KeyOverhead > 0 {
			// Under a prefix the driver sees an ordinary key, limited as one.
			bigSys = pad(sysKey, udb.MaxKeySize-h.KeyOverhead)
		}
		t.Cleanup(func() {
			ctx, cancel := cleanupContext()
			defer cancel()
			tx := newTx(t, e.db)
			if err := tx.Options().SetAccessSystemKeys(); err != nil {
				t.Errorf("SetAccessSystemKeys: %v", err)
				return
			}
			tx.Clear(sysKey)
			tx.Clear(bigSys)
			if err := tx.Commit(ctx); err != nil {
				t.Errorf("clearing the system keys: %v", err)
			}
		})
		tx := e.tx()
		expectOK(t, "SetAccessSystemKeys", tx.Options().SetAccessSystemKeys())
		tx.Set(sysKey, []byte("sys"))
		tx.Set(bigSys, []byte("big"))
		e.expectValue("in-txn Get of a system key", e.get(tx, sysKey), []byte("sys"))
		if !expectOK(t, "Commit of system keys with access_system_keys", tx.Commit(e.ctx)) {
			return
		}
		tx2 := e.tx()
		expectOK(t, "SetAccessSystemKeys", tx2.Options().SetAccessSystemKeys())
		e.expectValue("Get of a committed system key", e.get(tx2, sysKey), []byte("sys"))
		e.expectValue("Get of a committed 10,001-byte system key", e.get(tx2, bigSys), []byte("big"))
	})
}
