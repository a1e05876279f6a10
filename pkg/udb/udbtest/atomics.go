package udbtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

// Section E: atomic operations, versionstamps.
func atomicCases() []testCase {
	return []testCase{
		{"40_Add", vectorCase(addVectors())},
		{"41_BitAndOrXor", vectorCase(bitVectors())},
		{"42_MaxMin", vectorCase(maxMinVectors())},
		{"43_ByteMinMax", vectorCase(byteMinMaxVectors())},
		{"44_AppendIfFits", vectorCase(appendVectors())},
		{"45_CompareAndClear", vectorCase(compareAndClearVectors())},
		{"40-45_InvalidMutationType", testInvalidMutation},
		{"46_ConcurrentAdds", testConcurrentAdds},
		{"47_VersionstampedKey", testVersionstampedKey},
		{"48_VersionstampedValue", testVersionstampedValue},
	}
}

// vector is one atomic-op case from fdbclient/Atomic.h. A nil existing means
// the key is absent; a nil want means the op leaves the key absent.
type vector struct {
	name     string
	op       udb.MutationType
	existing []byte
	param    []byte
	want     []byte
}

// bs is a readable constructor for byte slices in the vectors.
func bs(v ...byte) []byte { return append([]byte{}, v...) }

var emptyVal = []byte{}

func addVectors() []vector {
	op := udb.MutationAdd
	sixteen := append(bytes.Repeat([]byte{0xff}, 8), make([]byte, 8)...)
	one16 := append([]byte{1}, make([]byte, 15)...)
	want16 := append(make([]byte, 8), 1, 0, 0, 0, 0, 0, 0, 0)
	return []vector{
		{"absent", op, nil, bs(1, 0), bs(1, 0)},
		{"empty existing", op, emptyVal, bs(5), bs(5)},
		{"empty param", op, bs(5), emptyVal, emptyVal},
		{"same length", op, bs(1, 2), bs(3, 4), bs(4, 6)},
		{"shorter existing is zero-extended", op, bs(1), bs(2, 0), bs(3, 0)},
		{"longer existing is truncated", op, bs(1, 2, 3), bs(1), bs(2)},
		{"carry into the next byte", op, bs(0xff, 0), bs(1, 0), bs(0, 1)},
		{"carry into a zero-extended byte", op, bs(0xff), bs(1, 0), bs(0, 1)},
		{"overflow wraps", op, bs(0xff, 0xff), bs(1, 0), bs(0, 0)},
		{"negative one", op, le64(5), le64(^uint64(0)), le64(4)},
		{"16-byte operand", op, sixteen, one16, want16},
	}
}

func bitVectors() []vector {
	and, or, xor := udb.MutationBitAnd, udb.MutationBitOr, udb.MutationBitXor
	return []vector{
		{"And absent gives param", and, nil, bs(0x0f), bs(0x0f)},
		{"And empty existing", and, emptyVal, bs(0x0f), bs(0)},
		{"And same length", and, bs(0xff, 0x0f), bs(0xf0, 0xff), bs(0xf0, 0x0f)},
		{"And longer existing truncated", and, bs(0xff, 0x0f), bs(0xf0), bs(0xf0)},
		{"And shorter existing zero-extended", and, bs(0x0f), bs(0xff, 0xff), bs(0x0f, 0)},
		{"And empty param", and, bs(5), emptyVal, emptyVal},
		{"Or absent gives param", or, nil, bs(0x0f), bs(0x0f)},
		{"Or empty existing gives param", or, emptyVal, bs(0x0f), bs(0x0f)},
		{"Or shorter existing, tail from param", or, bs(1), bs(2, 4), bs(3, 4)},
		{"Or longer existing truncated", or, bs(1, 2, 3), bs(0x10), bs(0x11)},
		{"Or empty param", or, bs(5), emptyVal, emptyVal},
		{"Xor absent gives param", xor, nil, bs(0x0f), bs(0x0f)},
		{"Xor empty existing gives param", xor, emptyVal, bs(0x0f), bs(0x0f)},
		{"Xor shorter existing, tail from param", xor, bs(0xff), bs(0x0f, 0xf0), bs(0xf0, 0xf0)},
		{"Xor longer existing truncated", xor, bs(1, 2), bs(3), bs(2)},
		{"Xor empty param", xor, bs(5), emptyVal, emptyVal},
	}
}

func maxMinVectors() []vector {
	mx, mn := udb.MutationMax, udb.MutationMin
	return []vector{
		{"Max absent", mx, nil, bs(5), bs(5)},
		{"Max empty existing gives param", mx, emptyVal, bs(5), bs(5)},
		{"Max param wins", mx, bs(3), bs(5), bs(5)},
		{"Max existing wins", mx, bs(5), bs(3), bs(5)},
		{"Max unsigned high bit", mx, bs(0x80), bs(0x7f), bs(0x80)},
		{"Max little-endian order", mx, bs(0, 1), bs(0xff, 0), bs(0, 1)},
		{"Max shorter existing, param larger", mx, bs(5), bs(1, 1), bs(1, 1)},
		{"Max shorter existing, existing larger, zero-extended", mx, bs(5), bs(1, 0), bs(5, 0)},
		{"Max longer existing truncated, then compared", mx, bs(0xff, 1), bs(2), bs(0xff)},
		{"Max longer existing truncated, param wins", mx, bs(5, 0, 0), bs(6), bs(6)},
		{"Max all-ones is the largest unsigned", mx, le64(^uint64(0)), le64(1), le64(^uint64(0))},
		{"Max empty param", mx, bs(5), emptyVal, emptyVal},
		{"Min absent", mn, nil, bs(5), bs(5)},
		{"Min empty existing is zero", mn, emptyVal, bs(5), bs(0)},
		{"Min empty existing, zero param", mn, emptyVal, bs(0), bs(0)},
		{"Min param wins", mn, bs(5), bs(3), bs(3)},
		{"Min existing wins", mn, bs(3), bs(5), bs(3)},
		{"Min unsigned high bit", mn, bs(0x80), bs(0x7f), bs(0x7f)},
		{"Min little-endian order", mn, bs(0, 1), bs(0xff, 0), bs(0xff, 0)},
		{"Min shorter existing, zero-extended", mn, bs(5), bs(1, 1), bs(5, 0)},
		{"Min longer existing truncated, existing wins", mn, bs(5, 0, 0), bs(6), bs(5)},
		{"Min longer existing truncated, param wins", mn, bs(0xff, 1), bs(2), bs(2)},
		{"Min all-ones is the largest unsigned", mn, le64(^uint64(0)), le64(1), le64(1)},
		{"Min empty param", mn, bs(5), emptyVal, emptyVal},
	}
}

func byteMinMaxVectors() []vector {
	mn, mx := udb.MutationByteMin, udb.MutationByteMax
	return []vector{
		{"ByteMin absent", mn, nil, []byte("abc"), []byte("abc")},
		{"ByteMin existing smaller", mn, []byte("abc"), []byte("abd"), []byte("abc")},
		{"ByteMin param smaller", mn, []byte("b"), []byte("abc"), []byte("abc")},
		{"ByteMin prefix is smaller", mn, []byte("abc"), []byte("ab"), []byte("ab")},
		{"ByteMin empty existing", mn, emptyVal, []byte("a"), emptyVal},
		{"ByteMin high bytes", mn, bs(0xff), bs(0x01, 0x02), bs(0x01, 0x02)},
		{"ByteMax absent", mx, nil, []byte("abc"), []byte("abc")},
		{"ByteMax existing larger", mx, []byte("abd"), []byte("abc"), []byte("abd")},
		{"ByteMax longer is larger", mx, []byte("ab"), []byte("abc"), []byte("abc")},
		{"ByteMax empty existing", mx, emptyVal, []byte("a"), []byte("a")},
		{"ByteMax high bytes", mx, bs(0xff), bs(0x01, 0x02), bs(0xff)},
		{"ByteMax empty param", mx, []byte("a"), emptyVal, []byte("a")},
	}
}

func appendVectors() []vector {
	op := udb.MutationAppendIfFits
	almost := bytes.Repeat([]byte{'e'}, udb.MaxValueSize-2)
	full := append(bytes.Clone(almost), 'p', 'p')
	over := bytes.Repeat([]byte{'e'}, udb.MaxValueSize-1)
	return []vector{
		{"absent", op, nil, []byte("ab"), []byte("ab")},
		{"empty existing", op, emptyVal, []byte("ab"), []byte("ab")},
		{"append", op, []byte("ab"), []byte("cd"), []byte("abcd")},
		{"empty param", op, []byte("ab"), emptyVal, []byte("ab")},
		{"exactly 100,000 bytes", op, almost, []byte("pp"), full},
		{"overflow leaves it unchanged", op, over, []byte("pp"), over},
	}
}

func compareAndClearVectors() []vector {
	op := udb.MutationCompareAndClear
	return []vector{
		{"equal clears", op, []byte("v"), []byte("v"), nil},
		{"unequal keeps", op, []byte("v"), []byte("w"), []byte("v")},
		{"absent stays absent", op, nil, []byte("v"), nil},
		{"empty equals empty", op, emptyVal, emptyVal, nil},
		{"empty vs non-empty keeps", op, emptyVal, []byte("a"), emptyVal},
		{"prefix is not equal", op, []byte("ab"), []byte("a"), []byte("ab")},
	}
}

// vectorCase runs each vector three ways: (a) a plain commit over the
// committed existing value; (b) read back in the same transaction (RYW),
// then committed; (c) over an existing value set (or cleared) earlier in the
// same transaction.
func vectorCase(vs []vector) func(t *testing.T, h Harness) {
	return func(t *testing.T, h Harness) {
		e := newEnv(t, h)
		for i, v := range vs {
			t.Run(v.name, func(t *testing.T) {
				e := e.sub(t)
				key := func(mode string) []byte { return e.k(fmt.Sprintf("v%02d/%s", i, mode)) }
				what := fmt.Sprintf("op %d existing %s param %s", v.op, short(v.existing), short(v.param))

				// (a) plain commit.
				ka := key("plain")
				if v.existing != nil {
					e.setRaw(ka, v.existing)
				}
				tx := e.tx()
				tx.Atomic(v.op, ka, v.param)
				e.commit(tx)
				e.expectValueShort("(a) after commit: "+what, e.read(ka), v.want)

				// (b) read back in the same transaction.
				kb := key("ryw")
				if v.existing != nil {
					e.setRaw(kb, v.existing)
				}
				tx = e.tx()
				tx.Atomic(v.op, kb, v.param)
				e.expectValueShort("(b) in-txn Get: "+what, e.get(tx, kb), v.want)
				rows := e.rngKeys(tx, kb, udb.KeyAfter(kb), udb.RangeOptions{})
				if (len(rows) == 1) != (v.want != nil) || (len(rows) == 1 && !bytes.Equal(rows[0].Value, v.want)) {
					t.Errorf("(b) in-txn GetRange: %s: got %d rows, want %s", what, len(rows), short(v.want))
				}
				e.commit(tx)
				e.expectValueShort("(b) after commit: "+what, e.read(kb), v.want)

				// (c) after a Set (or Clear, for absent) in the same
				// transaction, over a different committed value.
				kc := key("afterset")
				e.setRaw(kc, []byte("decoy"))
				tx = e.tx()
				if v.existing != nil {
					tx.Set(kc, v.existing)
				} else {
					tx.Clear(kc)
				}
				tx.Atomic(v.op, kc, v.param)
				e.expectValueShort("(c) in-txn Get: "+what, e.get(tx, kc), v.want)
				e.commit(tx)
				e.expectValueShort("(c) after commit: "+what, e.read(kc), v.want)
			})
		}
	}
}

// short formats a value for messages, abbreviating long ones.
func short(v []byte) string {
	switch {
	case v == nil:
		return "absent"
	case len(v) > 32:
		return fmt.Sprintf("%d bytes %x...", len(v), v[:8])
	default:
		return fmt.Sprintf("%x (len %d)", v, len(v))
	}
}

// expectValueShort is expectValue with abbreviated values.
func (e *env) expectValueShort(what string, got, want []byte) {
	e.t.Helper()
	if (got == nil) != (want == nil) || !bytes.Equal(got, want) {
		e.t.Errorf("%s: got %s, want %s", what, short(got), short(want))
	}
}

// An unknown mutation type fails with invalid_mutation_type (2013), deferred
// to the next read or Commit.
func testInvalidMutation(t *testing.T, h Harness) {
	e := newEnv(t, h)
	for _, op := range []udb.MutationType{0, 1, 3, 99} {
		tx := e.tx()
		tx.Atomic(op, e.k("k"), le64(1))
		expectCode(t, fmt.Sprintf("Commit after Atomic(%d)", op), tx.Commit(e.ctx), udb.CodeInvalidMutationType)
	}
	e.expectValue("k", e.read(e.k("k")), nil)
}

// 46. Fifty concurrent Transact calls each add 1 to one key: no update is
// lost.
func testConcurrentAdds(t *testing.T, h Harness) {
	e := newEnv(t, h)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := e.db.Transact(e.ctx, func(tx udb.Transaction) (any, error) {
				tx.Atomic(udb.MutationAdd, e.k("counter"), le64(1))
				return nil, nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		expectOK(t, "concurrent Transact", err)
	}
	e.expectValue("counter", e.read(e.k("counter")), le64(n))
}

// vsKey builds a tuple-style versionstamped key: prefix, a 10-byte 0xff
// placeholder, a 2-byte big-endian user version, then the 4-byte
// little-endian offset of the placeholder.
func vsKey(prefix []byte, user uint16) []byte {
	k := bytes.Clone(prefix)
	pos := len(k)
	k = append(k, bytes.Repeat([]byte{0xff}, 10)...)
	k = binary.BigEndian.AppendUint16(k, user)
	return binary.LittleEndian.AppendUint32(k, uint32(pos))
}

// stamped is the key vsKey's placeholder becomes once committed with stamp.
func stamped(prefix []byte, stamp [10]byte, user uint16) []byte {
	k := append(bytes.Clone(prefix), stamp[:]...)
	return binary.BigEndian.AppendUint16(k, user)
}

// getStamp resolves a versionstamp future with a deadline.
func (e *env) getStamp(f udb.VersionstampFuture) ([10]byte, error) {
	ctx, cancel := context.WithTimeout(e.ctx, waitTimeout)
	defer cancel()
	return f.Get(ctx)
}

// 47. SetVersionstampedKey writes the commit's versionstamp into the key:
// it equals GetVersionstamp, starts with the commit version, increases in
// commit order, and user versions order keys within one transaction. The
// stamped range is unreadable in the transaction; a bad offset fails with
// client_invalid_operation (2000).
func testVersionstampedKey(t *testing.T, h Harness) {
	e := newEnv(t, h)
	prefix := append(e.k("vs/"), 0x33) // tuple code of a versionstamp

	commitStamped := func(users []uint16, value string) [10]byte {
		t.Helper()
		tx := e.tx()
		for _, u := range users {
			tx.Atomic(udb.MutationSetVersionstampedKey, vsKey(prefix, u), []byte(fmt.Sprintf("%s/%d", value, u)))
		}
		f := tx.GetVersionstamp()
		e.commit(tx)
		stamp, err := e.getStamp(f)
		if err != nil {
			t.Fatalf("GetVersionstamp: %v", err)
		}
		cv, err := tx.GetCommittedVersion()
		if expectOK(t, "GetCommittedVersion", err) && int64(binary.BigEndian.Uint64(stamp[:8])) != cv {
			t.Errorf("versionstamp %x: first 8 bytes are %d, want the commit version %d",
				stamp, binary.BigEndian.Uint64(stamp[:8]), cv)
		}
		return stamp
	}
	// Two user versions, written in descending order, sort ascending.
	s1 := commitStamped([]uint16{2, 1}, "first")
	s2 := commitStamped([]uint16{0}, "second")
	if bytes.Compare(s1[:], s2[:]) >= 0 {
		t.Errorf("versionstamps do not increase in commit order: %x then %x", s1, s2)
	}
	pb, pe := udb.PrefixRange(prefix)
	got := e.rngKeys(e.tx(), pb, pe, udb.RangeOptions{})
	want := []udb.KeyValue{
		{Key: stamped(prefix, s1, 1), Value: []byte("first/1")},
		{Key: stamped(prefix, s1, 2), Value: []byte("first/2")},
		{Key: stamped(prefix, s2, 0), Value: []byte("second/0")},
	}
	if len(got) != len(want) {
		t.Fatalf("stamped keys: got %s, want %s", e.rows(got), e.rows(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Errorf("stamped key %d: got %s, want %s", i, e.rows(got[i:i+1]), e.rows(want[i:i+1]))
		}
	}

	t.Run("UnreadableInTransaction", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		e.grv(tx)
		tx.Atomic(udb.MutationSetVersionstampedKey, vsKey(prefix, 7), []byte("x"))
		_, err := tx.GetRange(udb.FirstGreaterOrEqual(pb), udb.FirstGreaterOrEqual(pe), udb.RangeOptions{}).All(e.ctx)
		expectCode(t, "GetRange over the stamped range in the transaction", err, udb.CodeAccessedUnreadable)
		_, err = tx.Get(e.ctx, vsKey(prefix, 7)[:len(prefix)+12]) // the placeholder key itself
		expectCode(t, "Get of the unstamped key in the transaction", err, udb.CodeAccessedUnreadable)
		_, err = tx.Get(e.ctx, e.k("elsewhere"))
		expectOK(t, "Get outside the stamped range", err)
	})
	t.Run("BadOffset", func(t *testing.T) {
		e := e.sub(t)
		k := vsKey(prefix, 1)
		binary.LittleEndian.PutUint32(k[len(k)-4:], uint32(len(k)-4-9)) // placeholder runs past the key
		tx := e.tx()
		tx.Atomic(udb.MutationSetVersionstampedKey, k, []byte("x"))
		expectCode(t, "Commit with a versionstamp offset past the key's end", tx.Commit(e.ctx), udb.CodeClientInvalidOperation)

		tx2 := e.tx()
		tx2.Atomic(udb.MutationSetVersionstampedKey, []byte{1, 2, 3}, []byte("x"))
		expectCode(t, "Commit with a key shorter than its offset", tx2.Commit(e.ctx), udb.CodeClientInvalidOperation)
	})
	t.Run("ReadOnlyHasNoVersionstamp", func(t *testing.T) {
		e := e.sub(t)
		tx := e.tx()
		e.get(tx, e.k("x"))
		f := tx.GetVersionstamp()
		e.commit(tx)
		_, err := e.getStamp(f)
		expectCode(t, "GetVersionstamp of a read-only commit", err, udb.CodeNoCommitVersion)
	})
}

// 48. SetVersionstampedValue writes the versionstamp into the value; the key
// is unreadable until commit.
func testVersionstampedValue(t *testing.T, h Harness) {
	e := newEnv(t, h)
	param := []byte("pre")
	pos := len(param)
	param = append(param, make([]byte, 10)...)
	param = append(param, "post"...)
	param = binary.LittleEndian.AppendUint32(param, uint32(pos))

	tx := e.tx()
	tx.Atomic(udb.MutationSetVersionstampedValue, e.k("k"), param)
	_, err := tx.Get(e.ctx, e.k("k"))
	expectCode(t, "in-txn Get of a key with a versionstamped value", err, udb.CodeAccessedUnreadable)
	f := tx.GetVersionstamp()
	e.commit(tx)
	stamp, err := e.getStamp(f)
	if err != nil {
		t.Fatalf("GetVersionstamp: %v", err)
	}
	want := append([]byte("pre"), stamp[:]...)
	want = append(want, "post"...)
	e.expectValue("value after commit", e.read(e.k("k")), want)

	bad := bytes.Clone(param)
	binary.LittleEndian.PutUint32(bad[len(bad)-4:], uint32(len(bad)-4-9))
	tx2 := e.tx()
	tx2.Atomic(udb.MutationSetVersionstampedValue, e.k("bad"), bad)
	expectCode(t, "Commit with a value versionstamp offset past the end", tx2.Commit(e.ctx), udb.CodeClientInvalidOperation)
}
