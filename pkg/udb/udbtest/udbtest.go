// Package udbtest is the conformance suite every udb driver must pass. It
// asserts FoundationDB's behaviour, not one driver's, in numbered, deterministic
// cases, each in a fresh random subspace; docs/udb.md ("The conformance suite")
// describes them. A driver's test calls Run:
//
//	func TestConformance(t *testing.T) {
//		udbtest.Run(t, udbtest.Harness{Open: func(t testing.TB) udb.Database { ... }})
//	}
package udbtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

// Harness tells the suite how to reach a driver.
type Harness struct {
	// Open returns a database; it may be shared between tests (the suite
	// isolates each test in a fresh random subspace ("udbtest", random uuid
	// bytes) and clears it afterwards). Register cleanup with t.Cleanup
	// yourself in the harness.
	Open func(t testing.TB) udb.Database
	// OpenWithMaxWatches returns a database whose watch limit is n; nil skips
	// that case.
	OpenWithMaxWatches func(t testing.TB, n int) udb.Database
	// Reopen closes db and opens the same store again (durable drivers); nil
	// skips the durability section. The durability section runs last, so a
	// Reopen that closes the database Open shares does not disturb other cases.
	Reopen func(t testing.TB, db udb.Database) udb.Database
	// KeyOverhead is how many bytes the driver adds to every key before its
	// size checks (a key prefix, udb.WithPrefix): the key-size cases then
	// expect the limits lowered by it, and system keys no longer than
	// MaxKeySize less it.
	KeyOverhead int
}

// testCase is one numbered conformance case (docs/udb.md, "The conformance suite").
type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}

// section is one lettered group of cases.
type section struct {
	name  string
	cases []testCase
}

// Run runs the whole suite against the driver h reaches. Sections and cases
// run in order, never in parallel.
func Run(t *testing.T, h Harness) {
	if h.Open == nil {
		t.Fatal("udbtest: Harness.Open is nil")
	}
	sections := []section{
		{"A_Basics", basicsCases()},
		{"B_Ranges", rangeCases()},
		{"C_Isolation", isolationCases()},
		{"D_Retry", retryCases()},
		{"E_Atomics", atomicCases()},
		{"F_Watches", watchCases()},
		{"G_Ordering", orderingCases()},
		{"H_Durability", durabilityCases()},
	}
	for _, s := range sections {
		t.Run(s.name, func(t *testing.T) {
			for _, c := range s.cases {
				t.Run(c.name, func(t *testing.T) { c.run(t, h) })
			}
		})
	}
}

// caseTimeout bounds one case, so a driver that hangs fails instead.
const caseTimeout = 2 * time.Minute

// env is one case's view of a database: a fresh subspace and a context.
type env struct {
	t      *testing.T
	ctx    context.Context
	db     udb.Database // replaced by Reopen in the durability section
	prefix []byte       // tuple ("udbtest", UUID)

	cleared bool // clearSubspace ran
}

// newEnv opens h's database and allocates a fresh subspace in it.
func newEnv(t *testing.T, h Harness) *env {
	t.Helper()
	return newEnvDB(t, h.Open(t))
}

// newEnvDB allocates a fresh subspace in db and clears it when t ends.
func newEnvDB(t *testing.T, db udb.Database) *env {
	t.Helper()
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	// Tuple encoding of ("udbtest", UUID): unicode string code 0x02 with a
	// 0x00 terminator, then UUID code 0x30 and 16 raw bytes.
	prefix := append([]byte{0x02}, "udbtest"...)
	prefix = append(prefix, 0x00, 0x30)
	prefix = append(prefix, id[:]...)
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	t.Cleanup(cancel)
	e := &env{t: t, ctx: ctx, db: db, prefix: prefix}
	t.Cleanup(e.clearSubspace)
	return e
}

// sub returns a copy of e that reports to the subtest t; reporting to the
// parent from a subtest is not allowed for Fatal.
func (e *env) sub(t *testing.T) *env {
	c := *e
	c.t = t
	return &c
}

// clearSubspace removes everything the case wrote to its subspace, once.
func (e *env) clearSubspace() {
	if e.cleared {
		return
	}
	e.cleared = true
	ctx, cancel := cleanupContext()
	defer cancel()
	b, end := e.rangeAll()
	_, err := e.db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		tx.ClearRange(b, end)
		return nil, nil
	})
	if err != nil {
		e.t.Errorf("udbtest cleanup: clearing the case's subspace: %v", err)
	}
}

// cleanupContext is the context for work in t.Cleanup functions, which run
// after the test's own context is cancelled.
func cleanupContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// k returns the subspace prefix followed by the parts.
func (e *env) k(parts ...string) []byte {
	out := bytes.Clone(e.prefix)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// kb is k for a raw byte suffix.
func (e *env) kb(suffix []byte) []byte {
	return append(bytes.Clone(e.prefix), suffix...)
}

// rangeAll is [prefix, strinc(prefix)): the whole subspace including the
// prefix key itself.
func (e *env) rangeAll() (begin, end []byte) {
	return udb.PrefixRange(e.prefix)
}

// strip returns key without the subspace prefix, quoted for messages.
func (e *env) strip(key []byte) string {
	if bytes.HasPrefix(key, e.prefix) {
		return fmt.Sprintf("%q", key[len(e.prefix):])
	}
	return fmt.Sprintf("(outside subspace) %q", key)
}

// tx creates a transaction that is cancelled when the case ends.
func (e *env) tx() udb.Transaction {
	e.t.Helper()
	return newTx(e.t, e.db)
}

func newTx(t *testing.T, db udb.Database) udb.Transaction {
	t.Helper()
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatalf("CreateTransaction: %v", err)
	}
	t.Cleanup(tx.Cancel)
	return tx
}

// pair is one row written by set, as strings relative to the subspace.
type pair struct{ k, v string }

// set commits the rows (suffix, value) in one transaction.
func (e *env) set(kvs ...pair) {
	e.t.Helper()
	tx := e.tx()
	for _, kv := range kvs {
		tx.Set(e.k(kv.k), []byte(kv.v))
	}
	e.commit(tx)
}

// reset replaces the subspace's contents with the rows, in one transaction.
func (e *env) reset(kvs ...pair) {
	e.t.Helper()
	tx := e.tx()
	b, end := e.rangeAll()
	tx.ClearRange(b, end)
	for _, kv := range kvs {
		tx.Set(e.k(kv.k), []byte(kv.v))
	}
	e.commit(tx)
}

// setRaw commits key=value in one transaction.
func (e *env) setRaw(key, value []byte) {
	e.t.Helper()
	tx := e.tx()
	tx.Set(key, value)
	e.commit(tx)
}

// commit commits tx and fails the case if that fails.
func (e *env) commit(tx udb.Transaction) {
	e.t.Helper()
	if err := tx.Commit(e.ctx); err != nil {
		e.t.Fatalf("Commit: %v", err)
	}
}

// grv takes tx's read version now.
func (e *env) grv(tx udb.Transaction) int64 {
	e.t.Helper()
	v, err := tx.GetReadVersion(e.ctx)
	if err != nil {
		e.t.Fatalf("GetReadVersion: %v", err)
	}
	return v
}

// get reads key through r and fails the case on error.
func (e *env) get(r udb.ReadTransaction, key []byte) []byte {
	e.t.Helper()
	v, err := r.Get(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Get(%s): %v", e.strip(key), err)
	}
	return v
}

// read reads key in a fresh transaction.
func (e *env) read(key []byte) []byte {
	e.t.Helper()
	tx := e.tx()
	defer tx.Cancel()
	return e.get(tx, key)
}

// getKey resolves sel through r and fails the case on error.
func (e *env) getKey(r udb.ReadTransaction, sel udb.KeySelector) []byte {
	e.t.Helper()
	k, err := r.GetKey(e.ctx, sel)
	if err != nil {
		e.t.Fatalf("GetKey(%s): %v", e.sel(sel), err)
	}
	return k
}

// sel formats a selector relative to the subspace.
func (e *env) sel(s udb.KeySelector) string {
	return fmt.Sprintf("{%s orEqual=%v offset=%d}", e.strip(s.Key), s.OrEqual, s.Offset)
}

// rng reads [begin, end) through r with All and fails the case on error.
func (e *env) rng(r udb.ReadTransaction, begin, end udb.KeySelector, opt udb.RangeOptions) []udb.KeyValue {
	e.t.Helper()
	kvs, err := r.GetRange(begin, end, opt).All(e.ctx)
	if err != nil {
		e.t.Fatalf("GetRange(%s, %s, %+v): %v", e.sel(begin), e.sel(end), opt, err)
	}
	return kvs
}

// rngKeys reads [begin, end) with plain keys as endpoints.
func (e *env) rngKeys(r udb.ReadTransaction, begin, end []byte, opt udb.RangeOptions) []udb.KeyValue {
	e.t.Helper()
	return e.rng(r, udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), opt)
}

// contents is every row of the subspace, read in a fresh transaction.
func (e *env) contents() []udb.KeyValue {
	e.t.Helper()
	tx := e.tx()
	defer tx.Cancel()
	b, end := e.rangeAll()
	return e.rngKeys(tx, b, end, udb.RangeOptions{})
}

// rows formats rows relative to the subspace as "k=v" items.
func (e *env) rows(kvs []udb.KeyValue) string {
	parts := make([]string, len(kvs))
	for i, kv := range kvs {
		parts[i] = e.strip(kv.Key) + "=" + fmt.Sprintf("%q", kv.Value)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// expectRows checks that got holds exactly want, in order; want's keys are
// subspace suffixes.
func (e *env) expectRows(what string, got []udb.KeyValue, want ...pair) {
	e.t.Helper()
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = bytes.Equal(got[i].Key, e.k(want[i].k)) && bytes.Equal(got[i].Value, []byte(want[i].v))
	}
	if !ok {
		w := make([]udb.KeyValue, len(want))
		for i, p := range want {
			w[i] = udb.KeyValue{Key: e.k(p.k), Value: []byte(p.v)}
		}
		e.t.Errorf("%s:\n got  %s\n want %s", what, e.rows(got), e.rows(w))
	}
}

// expectValue checks a Get result; want nil means absent, and a present empty
// value must be a non-nil empty slice.
func (e *env) expectValue(what string, got, want []byte) {
	e.t.Helper()
	switch {
	case want == nil && got != nil:
		e.t.Errorf("%s: got %q, want absent (nil)", what, got)
	case want != nil && got == nil:
		e.t.Errorf("%s: got absent (nil), want %q", what, want)
	case !bytes.Equal(got, want):
		e.t.Errorf("%s: got %q, want %q", what, got, want)
	}
}

// expectKey checks a resolved key against a wanted full key.
func (e *env) expectKey(what string, got, want []byte) {
	e.t.Helper()
	if !bytes.Equal(got, want) {
		e.t.Errorf("%s: got key %s, want %s", what, e.strip(got), e.strip(want))
	}
}

// expectCode checks that err carries the FoundationDB error code.
func expectCode(t testing.TB, what string, err error, code int) bool {
	t.Helper()
	if udb.HasCode(err, code) {
		return true
	}
	if err == nil {
		t.Errorf("%s: got success, want error %s", what, codeName(code))
	} else {
		t.Errorf("%s: got error %v, want %s", what, err, codeName(code))
	}
	return false
}

// expectOK checks that err is nil.
func expectOK(t testing.TB, what string, err error) bool {
	t.Helper()
	if err != nil {
		t.Errorf("%s: unexpected error %v", what, err)
		return false
	}
	return true
}

// codeName formats a code as "name (code)".
func codeName(code int) string {
	return fmt.Sprintf("%s (%d)", udb.Error{Code: code}.Name(), code)
}

// le64 is v as 8 little-endian bytes, the operand format of atomic Add.
func le64(v uint64) []byte {
	return binary.LittleEndian.AppendUint64(nil, v)
}

// waitTimeout bounds every wait for something that must happen.
const waitTimeout = 10 * time.Second

// notYet is how long a negative check waits for something that must not
// happen (a watch that must not fire).
const notYet = 50 * time.Millisecond

// pad returns key extended with 'x' bytes to exactly n bytes.
func pad(key []byte, n int) []byte {
	if len(key) > n {
		panic("udbtest: key longer than the padded size")
	}
	return append(bytes.Clone(key), bytes.Repeat([]byte{'x'}, n-len(key))...)
}
