package udbtest

import (
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section C: isolation. Every case takes the read versions of all its
// transactions first, then runs the steps in a fixed order, so the outcome is
// exact. T commits iff no transaction that committed after T's read version
// wrote a range T read; blind writes never conflict.
func isolationCases() []testCase {
	return []testCase{
		{"17_ReadThenConcurrentWrite", testReadConcurrentWrite},
		{"18_PhantomInsert", testPhantom},
		{"19_LimitTrimmedRangeConflict", testLimitTrimmed},
		{"20_SnapshotReadNoConflict", testSnapshotRead},
		{"21_SnapshotReadWithReadConflictKey", testSnapshotReadConflictKey},
		{"22_BlindWritesBothCommit", testBlindWrites},
		{"23_WriteAfterConcurrentReaderCommitted", testWriteAfterReader},
		{"24_ReadOnlyNeverConflicts", testReadOnly},
		{"25_OwnWriteThenReadNoConflict", testOwnWriteRead},
		{"26_AtomicOpNoReadConflict", testAtomicNoConflict},
		{"27_AddWriteConflictKey", testAddWriteConflict},
		{"28_NextWriteNoWriteConflictRange", testNextWriteNoConflict},
		{"29_RepeatableReads", testRepeatableReads},
		{"30_ReadVersionAfterCommit", testReadVersionAfterCommit},
		{"31_GetKeyConflict", testGetKeyConflict},
		{"57_PrefetchChangesNothing", testPrefetch},
	}
}

// pair2 takes the read versions of two fresh transactions, t1 first.
func (e *env) pair2() (t1, t2 udb.Transaction) {
	e.t.Helper()
	t1, t2 = e.tx(), e.tx()
	e.grv(t1)
	e.grv(t2)
	return t1, t2
}

// writeAndCommit commits a concurrent writer that sets key=value.
func (e *env) writeAndCommit(tx udb.Transaction, key string, value string) {
	e.t.Helper()
	tx.Set(e.k(key), []byte(value))
	e.commit(tx)
}

// expectConflict commits tx and expects not_committed (1020).
func (e *env) expectConflict(what string, tx udb.Transaction) {
	e.t.Helper()
	expectCode(e.t, what, tx.Commit(e.ctx), udb.CodeNotCommitted)
}

// expectCommit commits tx and expects success.
func (e *env) expectCommit(what string, tx udb.Transaction) bool {
	e.t.Helper()
	return expectOK(e.t, what, tx.Commit(e.ctx))
}

// 17. T1 reads k; T2 writes k and commits; T1 (with a write elsewhere) fails
// with not_committed.
func testReadConcurrentWrite(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.expectValue("T1 Get(k)", e.get(t1, e.k("k")), []byte("v0"))
	e.writeAndCommit(t2, "k", "v2")
	t1.Set(e.k("other"), []byte("t1"))
	e.expectConflict("T1 commit after T2 wrote the key T1 read", t1)
	e.expectRows("final state", e.contents(), pair{"k", "v2"})

	// The same with an absent key: reading "nothing" conflicts too.
	t3, t4 := e.pair2()
	e.expectValue("T3 Get(absent)", e.get(t3, e.k("absent")), nil)
	e.writeAndCommit(t4, "absent", "now")
	t3.Set(e.k("other"), []byte("t3"))
	e.expectConflict("T3 commit after T4 created the absent key T3 read", t3)
}

// 18. T1 scans an empty range; T2 inserts into it and commits; T1 fails. An
// insert at the range's exclusive end does not conflict.
func testPhantom(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"r0", "before"}, pair{"r9", "after"})

	t1, t2 := e.pair2()
	if kvs := e.rngKeys(t1, e.k("r1"), e.k("r5"), udb.RangeOptions{}); len(kvs) != 0 {
		t.Fatalf("T1 range [r1, r5): got %s, want empty", e.rows(kvs))
	}
	e.writeAndCommit(t2, "r3", "phantom")
	t1.Set(e.k("other"), []byte("t1"))
	e.expectConflict("T1 commit after a phantom insert into its scanned range", t1)

	t3, t4 := e.pair2()
	e.rngKeys(t3, e.k("r1"), e.k("r3"), udb.RangeOptions{})
	e.writeAndCommit(t4, "r3", "at end") // [r1, r3) excludes r3
	t3.Set(e.k("other"), []byte("t3"))
	e.expectCommit("T3 commit after an insert at its range's exclusive end", t3)

	t5, t6 := e.pair2()
	e.rngKeys(t5, e.k("r1"), e.k("r3"), udb.RangeOptions{Reverse: true})
	e.writeAndCommit(t6, "r1", "at begin") // inclusive begin, reverse scan
	t5.Set(e.k("other"), []byte("t5"))
	e.expectConflict("T5 commit after an insert at its reverse range's begin", t5)
}

// 19. A range read that stopped at its limit conflicts only on what it read
// up to the last returned key (forward) or from it (reverse).
func testLimitTrimmed(t *testing.T, h Harness) {
	e := newEnv(t, h)
	read := func(e *env, tx udb.Transaction, reverse bool, want string) {
		e.t.Helper()
		kvs := e.rngKeys(tx, e.k("a"), e.k("z"), udb.RangeOptions{Limit: 1, Reverse: reverse})
		e.expectRows("limit-1 read", kvs, pair{want, map[string]string{"a": "1", "m": "2"}[want]})
	}

	t.Run("ForwardWriteAfterLastReturned", func(t *testing.T) {
		e := e.sub(t)
		e.reset(pair{"a", "1"}, pair{"m", "2"})
		t1, t2 := e.pair2()
		read(e, t1, false, "a")
		e.writeAndCommit(t2, "y", "T2")
		t1.Set(e.k("t1"), []byte("x"))
		e.expectCommit("T1 commit: T2 wrote past the trimmed conflict range [a, a\\x00)", t1)
	})
	t.Run("ForwardWriteOnLastReturned", func(t *testing.T) {
		e := e.sub(t)
		e.reset(pair{"a", "1"}, pair{"m", "2"})
		t1, t2 := e.pair2()
		read(e, t1, false, "a")
		e.writeAndCommit(t2, "a", "T2")
		t1.Set(e.k("t1"), []byte("x"))
		e.expectConflict("T1 commit: T2 wrote the row T1 read", t1)
	})
	t.Run("ReverseWriteBeforeLastReturned", func(t *testing.T) {
		e := e.sub(t)
		e.reset(pair{"a", "1"}, pair{"m", "2"})
		t1, t2 := e.pair2()
		read(e, t1, true, "m")
		e.writeAndCommit(t2, "b", "T2")
		t1.Set(e.k("t1"), []byte("x"))
		e.expectCommit("T1 commit: T2 wrote before the trimmed reverse conflict range [m, z)", t1)
	})
	t.Run("ReverseWriteInsideRead", func(t *testing.T) {
		e := e.sub(t)
		e.reset(pair{"a", "1"}, pair{"m", "2"})
		t1, t2 := e.pair2()
		read(e, t1, true, "m")
		e.writeAndCommit(t2, "y", "T2")
		t1.Set(e.k("t1"), []byte("x"))
		e.expectConflict("T1 commit: T2 wrote inside [m, z), which T1's reverse read covered", t1)
	})
}

// 20. A snapshot read adds no read conflict.
func testSnapshotRead(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.expectValue("T1 snapshot Get(k)", e.get(t1.Snapshot(), e.k("k")), []byte("v0"))
	e.rngKeys(t1.Snapshot(), e.k("r"), e.k("s"), udb.RangeOptions{})
	e.getKey(t1.Snapshot(), udb.FirstGreaterOrEqual(e.k("j")))
	t2.Set(e.k("k"), []byte("v2"))
	t2.Set(e.k("r1"), []byte("phantom"))
	e.commit(t2)
	t1.Set(e.k("other"), []byte("t1"))
	e.expectCommit("T1 commit after snapshot reads of keys T2 changed", t1)
}

// 21. A snapshot read plus AddReadConflictKey conflicts like a serializable
// read.
func testSnapshotReadConflictKey(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.get(t1.Snapshot(), e.k("k"))
	if err := udb.AddReadConflictKey(t1, e.k("k")); err != nil {
		t.Fatalf("AddReadConflictKey: %v", err)
	}
	e.writeAndCommit(t2, "k", "v2")
	t1.Set(e.k("other"), []byte("t1"))
	e.expectConflict("T1 commit with an explicit read conflict on the key T2 wrote", t1)

	// An explicit read conflict range without any read.
	t3, t4 := e.pair2()
	if err := t3.AddReadConflictRange(e.k("p"), e.k("q")); err != nil {
		t.Fatalf("AddReadConflictRange: %v", err)
	}
	e.writeAndCommit(t4, "p5", "x")
	t3.Set(e.k("other"), []byte("t3"))
	e.expectConflict("T3 commit with a read conflict range covering T4's write", t3)
}

// 22. Two blind writes of the same key both commit; the later commit wins.
func testBlindWrites(t *testing.T, h Harness) {
	e := newEnv(t, h)
	t1, t2 := e.pair2()
	t1.Set(e.k("k"), []byte("T1"))
	t2.Set(e.k("k"), []byte("T2"))
	e.expectCommit("T2 blind write", t2)
	e.expectCommit("T1 blind write after T2 committed the same key", t1)
	e.expectValue("k after both commits (T1 committed last)", e.read(e.k("k")), []byte("T1"))
}

// 23. T1 reads k and commits; T2, whose read version is older than T1's
// commit, blind-writes k and commits: reads never make a later writer fail.
func testWriteAfterReader(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.get(t1, e.k("k"))
	t1.Set(e.k("t1"), []byte("x"))
	e.expectCommit("T1 (reader of k) commit", t1)
	t2.Set(e.k("k"), []byte("T2"))
	e.expectCommit("T2 blind write of k after reader T1 committed", t2)
	e.expectValue("k", e.read(e.k("k")), []byte("T2"))
}

// 24. A read-only transaction commits even when what it read changed, and
// has committed version -1.
func testReadOnly(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.get(t1, e.k("k"))
	e.rngKeys(t1, e.k("a"), e.k("z"), udb.RangeOptions{})
	if err := udb.AddReadConflictKey(t1, e.k("x")); err != nil {
		t.Fatalf("AddReadConflictKey: %v", err)
	}
	t2.Set(e.k("k"), []byte("v2"))
	t2.Set(e.k("x"), []byte("v2"))
	e.commit(t2)
	if e.expectCommit("read-only T1 commit after its reads changed", t1) {
		v, err := t1.GetCommittedVersion()
		if expectOK(t, "GetCommittedVersion", err) && v != -1 {
			t.Errorf("GetCommittedVersion of a read-only commit: got %d, want -1", v)
		}
	}
	empty := e.tx()
	if e.expectCommit("commit of an empty transaction", empty) {
		v, err := empty.GetCommittedVersion()
		if expectOK(t, "GetCommittedVersion", err) && v != -1 {
			t.Errorf("GetCommittedVersion of an empty commit: got %d, want -1", v)
		}
	}
}

// 25. Reading a key the transaction itself set adds no read conflict; a read
// before the write does.
func testOwnWriteRead(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"}, pair{"r/1", "x"})

	t1, t2 := e.pair2()
	t1.Set(e.k("k"), []byte("mine"))
	e.expectValue("T1 Get of its own write", e.get(t1, e.k("k")), []byte("mine"))
	t1.ClearRange(e.k("r/"), e.k("r0"))
	if kvs := e.rngKeys(t1, e.k("r/"), e.k("r0"), udb.RangeOptions{}); len(kvs) != 0 {
		t.Errorf("T1 range over its own ClearRange: got %s, want empty", e.rows(kvs))
	}
	t2.Set(e.k("k"), []byte("theirs"))
	t2.Set(e.k("r/2"), []byte("theirs"))
	e.commit(t2)
	e.expectCommit("T1 commit: its reads were served by its own writes", t1)
	e.expectValue("k", e.read(e.k("k")), []byte("mine"))
	e.expectValue("r/2 (inserted by T2, then cleared by T1's ClearRange, which committed later)",
		e.read(e.k("r/2")), nil)

	t3, t4 := e.pair2()
	e.get(t3, e.k("k")) // read first: conflict on k
	t3.Set(e.k("k"), []byte("t3"))
	e.writeAndCommit(t4, "k", "t4")
	e.expectConflict("T3 commit: it read k before writing it", t3)
}

// 26. An atomic op adds no read conflict, so it commits over a concurrent
// write; reading the key back in the transaction adds one.
func testAtomicNoConflict(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"n", string(le64(5))}, pair{"m", string(le64(5))})

	t1, t2 := e.pair2()
	t1.Atomic(udb.MutationAdd, e.k("n"), le64(1))
	e.writeAndCommit(t2, "n", string(le64(10)))
	e.expectCommit("T1 atomic Add after T2 set the key", t1)
	e.expectValue("n = T2's 10 + T1's 1", e.read(e.k("n")), le64(11))

	t3, t4 := e.pair2()
	t3.Atomic(udb.MutationAdd, e.k("m"), le64(1))
	e.expectValue("T3 Get of its atomic Add (RYW)", e.get(t3, e.k("m")), le64(6))
	e.writeAndCommit(t4, "m", string(le64(10)))
	e.expectConflict("T3 commit: it read the key of its atomic op", t3)
	e.expectValue("m", e.read(e.k("m")), le64(10))
}

// 27. A write conflict range without a mutation fails a concurrent reader and
// makes the transaction a read-write one.
func testAddWriteConflict(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"})
	t1, t2 := e.pair2()
	e.get(t2, e.k("k"))
	if err := udb.AddWriteConflictKey(t1, e.k("k")); err != nil {
		t.Fatalf("AddWriteConflictKey: %v", err)
	}
	if e.expectCommit("T1 commit with only a write conflict key", t1) {
		v, err := t1.GetCommittedVersion()
		if expectOK(t, "GetCommittedVersion", err) && v <= 0 {
			t.Errorf("GetCommittedVersion of a commit with a write conflict range: got %d, want a positive version", v)
		}
	}
	t2.Set(e.k("other"), []byte("t2"))
	e.expectConflict("T2 commit: T1's write conflict key covers what T2 read", t2)
	e.expectValue("k is unchanged (no mutation)", e.read(e.k("k")), []byte("v0"))

	t3, t4 := e.pair2()
	e.rngKeys(t3, e.k("r/"), e.k("r0"), udb.RangeOptions{})
	if err := t4.AddWriteConflictRange(e.k("r/5"), e.k("r/6")); err != nil {
		t.Fatalf("AddWriteConflictRange: %v", err)
	}
	e.commit(t4)
	t3.Set(e.k("other"), []byte("t3"))
	e.expectConflict("T3 commit: T4's write conflict range overlaps T3's scan", t3)
}

// 28. SetNextWriteNoWriteConflictRange suppresses the write conflict of the
// next write only.
func testNextWriteNoConflict(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v0"}, pair{"j", "v0"})
	t1, t2, t3 := e.tx(), e.tx(), e.tx()
	e.grv(t1)
	e.grv(t2)
	e.grv(t3)
	e.get(t2, e.k("k"))
	e.get(t3, e.k("j"))
	if err := t1.Options().SetNextWriteNoWriteConflictRange(); err != nil {
		t.Fatalf("SetNextWriteNoWriteConflictRange: %v", err)
	}
	t1.Set(e.k("k"), []byte("t1")) // no write conflict
	t1.Set(e.k("j"), []byte("t1")) // write conflict as usual
	e.commit(t1)
	t2.Set(e.k("o2"), []byte("t2"))
	t3.Set(e.k("o3"), []byte("t3"))
	e.expectCommit("T2 commit: T1's write of k had no write conflict range", t2)
	e.expectConflict("T3 commit: T1's second write (j) had its conflict range", t3)
	e.expectValue("k", e.read(e.k("k")), []byte("t1"))
}

// 29. Reads are repeatable: a transaction keeps seeing its read version's
// snapshot while other transactions commit.
func testRepeatableReads(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.set(pair{"k", "v1"}, pair{"k2", "v1"}, pair{"r/1", "a"}, pair{"r/3", "c"})
	t1, t2 := e.pair2()
	rb, re := e.k("r/"), e.k("r0")
	e.expectValue("T1 Get(k)", e.get(t1, e.k("k")), []byte("v1"))
	first := e.rngKeys(t1, rb, re, udb.RangeOptions{})
	t2.Set(e.k("k"), []byte("v2"))
	t2.Set(e.k("k2"), []byte("v2"))
	t2.Set(e.k("r/2"), []byte("b"))
	t2.Clear(e.k("r/3"))
	e.commit(t2)

	e.expectValue("T1 Get(k) again", e.get(t1, e.k("k")), []byte("v1"))
	e.expectValue("T1 first Get(k2), changed after T1's read version", e.get(t1, e.k("k2")), []byte("v1"))
	e.expectValue("T1 snapshot Get(k)", e.get(t1.Snapshot(), e.k("k")), []byte("v1"))
	e.expectRows("T1 range again", e.rngKeys(t1, rb, re, udb.RangeOptions{}), pair{"r/1", "a"}, pair{"r/3", "c"})
	e.expectRows("T1 snapshot range", e.rngKeys(t1.Snapshot(), rb, re, udb.RangeOptions{Reverse: true}),
		pair{"r/3", "c"}, pair{"r/1", "a"})
	if len(first) != 2 {
		t.Errorf("T1 first range: got %s, want r/1, r/3", e.rows(first))
	}
	e.expectKey("T1 GetKey(FirstGreaterThan(r/1))", e.getKey(t1, udb.FirstGreaterThan(e.k("r/1"))), e.k("r/3"))
}

// 30. A read version taken after a commit was acknowledged sees it; commit
// versions increase strictly; SetReadVersion reads an older snapshot.
func testReadVersionAfterCommit(t *testing.T, h Harness) {
	e := newEnv(t, h)
	var last int64
	var oldRV int64
	for i := range 5 {
		tx := e.tx()
		rv := e.grv(tx)
		if i == 0 {
			oldRV = rv
		}
		if rv < last {
			t.Errorf("commit %d: read version %d is below the previous commit version %d", i, rv, last)
		}
		e.expectValue("Get of the previous commit's write", e.get(tx, e.k("n")), func() []byte {
			if i == 0 {
				return nil
			}
			return le64(uint64(i))
		}())
		tx.Set(e.k("n"), le64(uint64(i+1)))
		e.commit(tx)
		cv, err := tx.GetCommittedVersion()
		if !expectOK(t, "GetCommittedVersion", err) {
			return
		}
		if cv <= rv {
			t.Errorf("commit %d: commit version %d is not above its read version %d", i, cv, rv)
		}
		if cv <= last {
			t.Errorf("commit %d: commit version %d is not above the previous commit version %d", i, cv, last)
		}
		last = cv
	}

	// SetReadVersion to the first read version reads the state before it.
	tx := e.tx()
	tx.SetReadVersion(oldRV)
	got, err := tx.GetReadVersion(e.ctx)
	if expectOK(t, "GetReadVersion after SetReadVersion", err) && got != oldRV {
		t.Errorf("GetReadVersion after SetReadVersion(%d): got %d", oldRV, got)
	}
	e.expectValue("Get at the old read version", e.get(tx, e.k("n")), nil)
	tx2 := e.tx()
	tx2.SetReadVersion(last)
	e.expectValue("Get at the last commit version", e.get(tx2, e.k("n")), le64(5))
}

// 31. GetKey conflicts on the keys between the selector's reference key and
// the key it resolved to.
func testGetKeyConflict(t *testing.T, h Harness) {
	e := newEnv(t, h)
	for _, c := range []struct {
		name     string
		sel      udb.KeySelector
		want     string
		write    string
		conflict bool
	}{
		{"FirstGreaterOrEqual(b)=c, insert bb", udb.FirstGreaterOrEqual(e.k("b")), "c", "bb", true},
		{"FirstGreaterOrEqual(b)=c, overwrite c", udb.FirstGreaterOrEqual(e.k("b")), "c", "c", true},
		{"FirstGreaterOrEqual(b)=c, insert d", udb.FirstGreaterOrEqual(e.k("b")), "c", "d", false},
		{"FirstGreaterOrEqual(b)=c, insert a0", udb.FirstGreaterOrEqual(e.k("b")), "c", "a0", false},
		{"LastLessThan(c)=a, insert b", udb.LastLessThan(e.k("c")), "a", "b", true},
		{"LastLessThan(c)=a, insert cc", udb.LastLessThan(e.k("c")), "a", "cc", false},
		{"FirstGreaterThan(c)=e, insert d", udb.FirstGreaterThan(e.k("c")), "e", "d", true},
		{"FirstGreaterThan(c)=e, overwrite c", udb.FirstGreaterThan(e.k("c")), "e", "c", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e.sub(t)
			e.reset(pair{"a", "1"}, pair{"c", "3"}, pair{"e", "5"})
			t1, t2 := e.pair2()
			e.expectKey("T1 GetKey", e.getKey(t1, c.sel), e.k(c.want))
			e.writeAndCommit(t2, c.write, "T2")
			t1.Set(e.k("zz"), []byte("t1"))
			if c.conflict {
				e.expectConflict("T1 commit: T2 wrote between the selector's key and its result", t1)
			} else {
				e.expectCommit("T1 commit: T2 wrote outside the selector's conflict range", t1)
			}
		})
	}
}

// 57. Prefetch changes nothing a transaction observes: its reads return what they would
// without it (its own writes over what it fetched, never a commit after its read version),
// and it adds no read conflicts.
func testPrefetch(t *testing.T, h Harness) {
	e := newEnv(t, h)
	e.seedLetters()
	t1, t2 := e.pair2()
	t1.Set(e.k("b"), []byte("own"))
	t1.ClearRange(e.k("c"), e.k("e"))
	t1.Prefetch(e.ctx, [][]byte{e.k("a"), e.k("b"), e.k("c"), e.k("zz")},
		[]udb.KeyRange{{Begin: e.k("a"), End: e.k("g")}, {Begin: e.k("x"), End: e.k("y")}})
	t1.Snapshot().Prefetch(e.ctx, [][]byte{e.k("h")}, nil)
	t2.Set(e.k("f"), []byte("T2"))
	e.writeAndCommit(t2, "a", "T2")
	snap := t1.Snapshot() // reads that add no conflicts either
	e.expectValue("a, prefetched, then written by T2", e.get(snap, e.k("a")), []byte("1"))
	e.expectValue("b, written by T1 before the prefetch", e.get(snap, e.k("b")), []byte("own"))
	e.expectValue("c, cleared by T1", e.get(snap, e.k("c")), nil)
	e.expectValue("zz, absent", e.get(snap, e.k("zz")), nil)
	e.expectValue("h", e.get(snap, e.k("h")), []byte("8"))
	e.expectRows("[a, g)", e.rngKeys(snap, e.k("a"), e.k("g"), udb.RangeOptions{}),
		pair{"a", "1"}, pair{"b", "own"}, pair{"e", "5"}, pair{"f", "6"})
	e.expectRows("[a, g) reverse, limit 2", e.rngKeys(snap, e.k("a"), e.k("g"), udb.RangeOptions{Reverse: true, Limit: 2}),
		pair{"f", "6"}, pair{"e", "5"})
	e.expectRows("[x, y), empty", e.rngKeys(snap, e.k("x"), e.k("y"), udb.RangeOptions{}))
	e.expectCommit("T1 commit after prefetching keys T2 changed", t1)
}
