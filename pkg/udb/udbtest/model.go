package udbtest

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
)

// ModelOptions sizes a Model run.
type ModelOptions struct {
	// Schedules is how many schedules to run, Budget how long at most (a loaded
	// machine stops early and says so); testing.Short divides both by 10.
	Schedules int
	Budget    time.Duration
	// Replay is the go test arguments that rerun the caller, for the failure
	// message: "TestModelSerializable ./pkg/udb/driver/embedded".
	Replay string
}

// Model runs random interleavings of a few transactions over
// a small key space and checks them against a serial-execution oracle:
//
//   - every read of every transaction equals the state at its read version
//     (the commits with version <= read version) plus its own earlier writes;
//   - replaying the committed read-write transactions serially in commit
//     version order reproduces every serializable read they made, and the
//     final contents of the database;
//   - a transaction aborted with not_committed (1020) had a cause: a
//     transaction that committed after its read version, before its commit,
//     wrote a range intersecting one of its read conflict ranges as
//     FoundationDB computes them (serializable Gets; range reads trimmed at
//     the limit, forward [begin, keyAfter(last)), reverse [last, end); both
//     minus the parts its own sets and clears determine; explicit read
//     conflict ranges likewise);
//   - a read-write transaction that committed had no such conflict;
//   - read versions see every commit acknowledged before they were taken, and
//     commit versions increase and exceed read versions.
//
// Each schedule runs in one goroutine, deterministically from its seed, in a
// subspace of its own of db; several schedules run at once so commits mix.
// Replay a failing run with BERTH_MODEL_SEED=<seed> (or -berth.model.seed),
// and one schedule of it with BERTH_MODEL_SCHEDULE=<index>.
func Model(t *testing.T, db udb.Database, o ModelOptions) {
	seed := modelMasterSeed(t)
	n, budget := o.Schedules, o.Budget
	if testing.Short() {
		n, budget = n/10, budget/10
	}
	only := -1
	if s := os.Getenv("BERTH_MODEL_SCHEDULE"); s != "" {
		i, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BERTH_MODEL_SCHEDULE=%q: %v", s, err)
		}
		only = i
	}
	if s := os.Getenv("BERTH_MODEL_SCHEDULES"); s != "" && only < 0 {
		i, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BERTH_MODEL_SCHEDULES=%q: %v", s, err)
		}
		n = i
	}

	var (
		next    atomic.Int64
		failed  atomic.Bool
		mu      sync.Mutex
		total   modelStats
		wg      sync.WaitGroup
		started = time.Now()
	)
	if only >= 0 {
		next.Store(int64(only))
		n = only + 1
	}
	workers := runtime.GOMAXPROCS(0)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() && (only >= 0 || time.Since(started) < budget) {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				s := newSchedule(db, seed, i)
				err := s.run()
				if err == nil {
					err = s.check()
				}
				mu.Lock()
				total.add(s.stats)
				mu.Unlock()
				if err != nil && failed.CompareAndSwap(false, true) {
					t.Errorf("schedule %d failed: %v\n\nschedule trace:\n%s\nreplay: BERTH_MODEL_SEED=%d BERTH_MODEL_SCHEDULE=%d go test -run %s",
						i, err, s.trace.String(), seed, i, o.Replay)
				}
			}
		}()
	}
	wg.Wait()
	if total.schedules < n && !failed.Load() {
		t.Logf("time budget of %v spent after %d of %d schedules", budget, total.schedules, n)
	}
	t.Logf("seed %d: %d schedules in %v: %d transactions, %d read-write commits, %d read-only, %d not_committed, %d cancelled, %d reads checked, %d SetReadVersion too old",
		seed, total.schedules, time.Since(started).Round(time.Millisecond), total.txns, total.commits, total.readOnly, total.conflicts, total.cancelled, total.reads, total.tooOld)
	if !t.Failed() && only < 0 {
		// A model test that never produces conflicts or commits checks little.
		if total.conflicts == 0 || total.commits == 0 {
			t.Errorf("seed %d: degenerate run: %d commits, %d conflicts", seed, total.commits, total.conflicts)
		}
	}
	if t.Failed() {
		t.Logf("replay with BERTH_MODEL_SEED=%d", seed)
	}
}

// TestSetReadVersionAtCommitVersion commits concurrently, so that commit
// groups form, then reads at each commit's version: FoundationDB's read at

// SetReadVersionAtCommitVersion commits concurrently through writer(i), so that
// commit groups form, then reads at each commit's version through reader(i):
// FoundationDB's read at version v sees every commit with version <= v, the
// transaction's own included.
func SetReadVersionAtCommitVersion(t *testing.T, writer, reader func(i int) udb.Database, rounds int) {
	ctx := context.Background()
	for round := range rounds {
		var wg sync.WaitGroup
		versions := make([]int64, 32)
		for i := range versions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tx, err := writer(i).CreateTransaction()
				if err != nil {
					t.Error(err)
					return
				}
				tx.Set([]byte(fmt.Sprintf("rv/%d/%d", round, i)), []byte("v"))
				if err := tx.Commit(ctx); err != nil {
					t.Error(err)
					return
				}
				versions[i], _ = tx.GetCommittedVersion()
			}()
		}
		wg.Wait()
		for i, v := range versions {
			tx, err := reader(i).CreateTransaction()
			if err != nil {
				t.Fatal(err)
			}
			tx.SetReadVersion(v)
			got, err := tx.Get(ctx, []byte(fmt.Sprintf("rv/%d/%d", round, i)))
			tx.Cancel()
			if err != nil || string(got) != "v" {
				t.Fatalf("round %d: commit %d at v%d, then SetReadVersion(v%d) and Get of the key it wrote: %q, %v; want \"v\"", round, i, v, v, got, err)
			}
		}
	}
}

var modelSeedFlag = flag.Uint64("berth.model.seed", 0, "master seed of the udbtest model test (0: from BERTH_MODEL_SEED or the clock)")

func modelMasterSeed(t *testing.T) uint64 {
	if *modelSeedFlag != 0 {
		return *modelSeedFlag
	}
	if s := os.Getenv("BERTH_MODEL_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("BERTH_MODEL_SEED=%q: %v", s, err)
		}
		return v
	}
	return uint64(time.Now().UnixNano())
}

type modelStats struct {
	schedules, txns, commits, readOnly, conflicts, cancelled, reads, tooOld int
}

func (s *modelStats) add(o modelStats) {
	s.schedules += o.schedules
	s.txns += o.txns
	s.commits += o.commits
	s.readOnly += o.readOnly
	s.conflicts += o.conflicts
	s.cancelled += o.cancelled
	s.reads += o.reads
	s.tooOld += o.tooOld
}

// opKind is one step a model transaction takes.
type opKind int

const (
	opGet opKind = iota
	opSnapGet
	opRange
	opSnapRange
	opSet
	opClear
	opClearRange
	opAdd
	opReadConflict
	opWriteConflict
)

var opNames = [...]string{"Get", "SnapshotGet", "GetRange", "SnapshotGetRange", "Set", "Clear", "ClearRange", "Add", "AddReadConflictRange", "AddWriteConflictRange"}

func (k opKind) String() string { return opNames[k] }

func (k opKind) isRead() bool {
	return k == opGet || k == opSnapGet || k == opRange || k == opSnapRange
}

// keyRange is [b, e).
type keyRange struct{ b, e []byte }

func (r keyRange) empty() bool { return bytes.Compare(r.b, r.e) >= 0 }

func (r keyRange) intersects(o keyRange) bool {
	return !r.empty() && !o.empty() && bytes.Compare(r.b, o.e) < 0 && bytes.Compare(o.b, r.e) < 0
}

func (r keyRange) intersect(o keyRange) keyRange {
	b, e := r.b, r.e
	if bytes.Compare(o.b, b) > 0 {
		b = o.b
	}
	if bytes.Compare(o.e, e) < 0 {
		e = o.e
	}
	return keyRange{b, e}
}

func pointRange(k []byte) keyRange { return keyRange{k, udb.KeyAfter(k)} }

// coveredBy reports whether every key of r lies in one of cover.
func (r keyRange) coveredBy(cover []keyRange) bool {
	cur := r.b
	for bytes.Compare(cur, r.e) < 0 {
		advanced := false
		for _, c := range cover {
			if bytes.Compare(c.b, cur) <= 0 && bytes.Compare(cur, c.e) < 0 {
				cur = c.e
				advanced = true
			}
		}
		if !advanced {
			return false
		}
	}
	return true
}

// mstep is one step of a model transaction and, once run, what it saw.
type mstep struct {
	kind    opKind
	key     []byte // the key, or a range's begin
	end     []byte
	val     []byte // Set's value, Add's parameter
	limit   int
	reverse bool
	mode    udb.StreamingMode
	gtBegin bool // range begin given as FirstGreaterThan(key-before)

	done bool
	got  []byte // Get's result; nil when absent
	rows []udb.KeyValue
	// independent is what the transaction's own sets and clears determined
	// when the step ran: those keys add no read conflict.
	independent []keyRange
}

func (s *mstep) String() string {
	var b strings.Builder
	b.WriteString(s.kind.String())
	switch s.kind {
	case opGet, opSnapGet, opClear:
		fmt.Fprintf(&b, "(%q)", s.key)
	case opSet, opAdd:
		fmt.Fprintf(&b, "(%q, %x)", s.key, s.val)
	case opClearRange, opReadConflict, opWriteConflict:
		fmt.Fprintf(&b, "(%q, %q)", s.key, s.end)
	case opRange, opSnapRange:
		fmt.Fprintf(&b, "(%q, %q, limit=%d, reverse=%v, mode=%d)", s.key, s.end, s.limit, s.reverse, s.mode)
	}
	if s.done {
		switch s.kind {
		case opGet, opSnapGet:
			if s.got == nil {
				b.WriteString(" = <absent>")
			} else {
				fmt.Fprintf(&b, " = %x", s.got)
			}
		case opRange, opSnapRange:
			b.WriteString(" = " + fmtRows(s.rows))
		}
	}
	return b.String()
}

func fmtRows(rows []udb.KeyValue) string {
	var parts []string
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%q:%x", r.Key, r.Value))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

type txnStatus int

const (
	statusOpen txnStatus = iota
	statusCommitted
	statusConflict
	statusCancelled
)

// mtxn is one transaction of a schedule.
type mtxn struct {
	id      int
	tx      udb.Transaction
	lazyRV  bool // no explicit GetReadVersion: the first read (or commit) takes it
	setRV   bool // SetReadVersion to the version of an earlier commit
	tooOld  bool // SetReadVersion's version was no longer kept (1007)
	steps   []*mstep
	pc      int // steps done; -1 before the explicit GetReadVersion
	cancel  bool
	status  txnStatus
	rv      int64
	rvKnown bool
	// rvAfter is how many schedule commits had been acknowledged when the
	// read version was taken (or, with lazyRV, a lower bound).
	rvAfter int
	cv      int64 // commit version; -1 for a read-only commit
	// commitAfter is how many schedule commits had been acknowledged when
	// Commit was called.
	commitAfter int
}

// schedule is one random interleaving of a few transactions.
type schedule struct {
	db     udb.Database
	idx    int
	rng    *rand.Rand
	prefix []byte
	keys   [][]byte
	bounds [][]byte // candidate range endpoints, sorted
	end    []byte   // end of the subspace

	initial   map[string][]byte
	initialV  int64
	txns      []*mtxn
	commitLog []*mtxn // read-write commits in acknowledgement order

	trace strings.Builder
	stats modelStats
}

func newSchedule(db udb.Database, seed uint64, idx int) *schedule {
	s := &schedule{
		db:     db,
		idx:    idx,
		rng:    rand.New(rand.NewPCG(seed, uint64(idx))),
		prefix: []byte(fmt.Sprintf("model/%07d/", idx)),
	}
	_, s.end = udb.PrefixRange(s.prefix)
	nkeys := 6 + s.rng.IntN(5)
	s.bounds = append(s.bounds, s.prefix, s.end)
	for i := range nkeys {
		k := append(bytes.Clone(s.prefix), 'k', byte('0'+i))
		s.keys = append(s.keys, k)
		s.bounds = append(s.bounds, k, udb.KeyAfter(k))
	}
	slices.SortFunc(s.bounds, bytes.Compare)
	s.stats.schedules = 1
	return s
}

func (s *schedule) tracef(format string, args ...any) {
	fmt.Fprintf(&s.trace, format+"\n", args...)
}

func (s *schedule) randKey() []byte { return s.keys[s.rng.IntN(len(s.keys))] }

func (s *schedule) randRange() ([]byte, []byte) {
	a, b := s.bounds[s.rng.IntN(len(s.bounds))], s.bounds[s.rng.IntN(len(s.bounds))]
	if bytes.Compare(a, b) > 0 {
		a, b = b, a
	}
	return a, b
}

func (s *schedule) randValue() []byte {
	v := make([]byte, s.rng.IntN(4)) // sometimes empty: present but empty
	for i := range v {
		v[i] = byte(s.rng.IntN(256))
	}
	return v
}

func (s *schedule) randStep() *mstep {
	// Weights: reads and writes in roughly equal measure.
	w := []int{opGet: 20, opSnapGet: 8, opRange: 12, opSnapRange: 5, opSet: 18, opClear: 6, opClearRange: 5, opAdd: 10, opReadConflict: 3, opWriteConflict: 3}
	sum := 0
	for _, x := range w {
		sum += x
	}
	r := s.rng.IntN(sum)
	kind := opKind(0)
	for i, x := range w {
		if r < x {
			kind = opKind(i)
			break
		}
		r -= x
	}
	st := &mstep{kind: kind}
	switch kind {
	case opGet, opSnapGet, opClear:
		st.key = s.randKey()
	case opSet:
		st.key, st.val = s.randKey(), s.randValue()
	case opAdd:
		st.key = s.randKey()
		st.val = make([]byte, []int{0, 1, 1, 2, 2, 2}[s.rng.IntN(6)])
		for i := range st.val {
			st.val[i] = byte(s.rng.IntN(256))
		}
	case opClearRange, opReadConflict, opWriteConflict:
		st.key, st.end = s.randRange()
	case opRange, opSnapRange:
		st.key, st.end = s.randRange()
		if s.rng.IntN(2) == 0 {
			st.limit = 1 + s.rng.IntN(4)
		}
		st.reverse = s.rng.IntN(2) == 0
		st.mode = []udb.StreamingMode{udb.StreamingModeIterator, udb.StreamingModeWantAll, udb.StreamingModeSmall, udb.StreamingModeSerial}[s.rng.IntN(4)]
		if st.limit > 0 && s.rng.IntN(4) == 0 {
			st.mode = udb.StreamingModeExact
		}
		// A begin that is some key's successor can be given as
		// FirstGreaterThan(key): it resolves without a lookup.
		st.gtBegin = len(st.key) > 0 && st.key[len(st.key)-1] == 0 && s.rng.IntN(2) == 0
	}
	return st
}

// run seeds the subspace, then interleaves the transactions step by step.
func (s *schedule) run() error {
	ctx := context.Background()
	// Initial state: a random subset of the keys.
	s.initial = map[string][]byte{}
	tx, err := s.db.CreateTransaction()
	if err != nil {
		return err
	}
	for _, k := range s.keys {
		if s.rng.IntN(2) == 0 {
			v := s.randValue()
			tx.Set(k, v)
			s.initial[string(k)] = v
		}
	}
	// A write conflict makes it a read-write commit, with a version, even
	// when it sets nothing.
	if err := tx.AddWriteConflictRange(s.prefix, s.end); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("initial commit: %w", err)
	}
	if s.initialV, err = tx.GetCommittedVersion(); err != nil {
		return err
	}
	s.tracef("initial state at v%d: %s", s.initialV, fmtState(s.initial))

	ntx := 2 + s.rng.IntN(4)
	for i := range ntx {
		t := &mtxn{id: i, pc: -1, cancel: s.rng.IntN(10) == 0}
		switch s.rng.IntN(10) {
		case 0, 1:
			t.lazyRV, t.pc = true, 0
		case 2, 3:
			t.setRV = true
		}
		for range 1 + s.rng.IntN(7) {
			t.steps = append(t.steps, s.randStep())
		}
		if t.tx, err = s.db.CreateTransaction(); err != nil {
			return err
		}
		s.txns = append(s.txns, t)
	}
	s.stats.txns = ntx
	defer func() {
		for _, t := range s.txns {
			t.tx.Cancel()
		}
	}()

	for {
		var open []*mtxn
		for _, t := range s.txns {
			if t.status == statusOpen {
				open = append(open, t)
			}
		}
		if len(open) == 0 {
			break
		}
		t := open[s.rng.IntN(len(open))]
		if err := s.advance(ctx, t); err != nil {
			return fmt.Errorf("transaction T%d: %w", t.id, err)
		}
	}
	return nil
}

// advance runs t's next step: its read version, an operation, or its end.
func (s *schedule) advance(ctx context.Context, t *mtxn) error {
	tx := t.tx
	switch {
	case t.pc < 0 && t.setRV:
		// Read at an earlier version of the schedule: the initial commit's,
		// a later commit's (exactly at a commit version, the boundary of
		// visibility and of conflicts) or another transaction's read
		// version.
		versions := []int64{s.initialV}
		for _, u := range s.commitLog {
			versions = append(versions, u.cv, u.cv)
		}
		for _, u := range s.txns {
			if u.rvKnown && !u.setRV {
				versions = append(versions, u.rv)
			}
		}
		t.rv = versions[s.rng.IntN(len(versions))]
		tx.SetReadVersion(t.rv)
		t.rvKnown, t.pc = true, 0
		if _, err := tx.GetReadVersion(ctx); err != nil {
			if udb.HasCode(err, udb.CodeTransactionTooOld) {
				// The driver keeps a bounded number of superseded
				// snapshots; other schedules' commits may have pushed
				// this one out.
				t.tooOld, t.status = true, statusCancelled
				s.stats.tooOld++
				s.tracef("T%d: SetReadVersion(v%d): transaction_too_old", t.id, t.rv)
				return nil
			}
			return fmt.Errorf("SetReadVersion(v%d): %w", t.rv, err)
		}
		s.tracef("T%d: SetReadVersion(v%d)", t.id, t.rv)
		return nil
	case t.pc < 0:
		t.rvAfter = len(s.commitLog)
		rv, err := tx.GetReadVersion(ctx)
		if err != nil {
			return fmt.Errorf("GetReadVersion: %w", err)
		}
		t.rv, t.rvKnown, t.pc = rv, true, 0
		s.tracef("T%d: read version v%d", t.id, rv)
		return nil
	case t.pc == len(t.steps):
		return s.finish(ctx, t)
	}
	st := t.steps[t.pc]
	t.pc++
	if st.kind.isRead() && !t.rvKnown {
		t.rvAfter = len(s.commitLog) // the read below takes the read version
	}
	st.independent = independentOf(t.steps[:t.pc-1])
	var err error
	switch st.kind {
	case opGet:
		st.got, err = tx.Get(ctx, st.key)
	case opSnapGet:
		st.got, err = tx.Snapshot().Get(ctx, st.key)
	case opRange, opSnapRange:
		var rt udb.ReadTransaction = tx
		if st.kind == opSnapRange {
			rt = tx.Snapshot()
		}
		begin := udb.FirstGreaterOrEqual(st.key)
		if st.gtBegin {
			begin = udb.FirstGreaterThan(st.key[:len(st.key)-1])
		}
		st.rows, err = rt.GetRange(begin, udb.FirstGreaterOrEqual(st.end), udb.RangeOptions{Limit: st.limit, Reverse: st.reverse, Mode: st.mode}).All(ctx)
	case opSet:
		tx.Set(st.key, st.val)
	case opClear:
		tx.Clear(st.key)
	case opClearRange:
		tx.ClearRange(st.key, st.end)
	case opAdd:
		tx.Atomic(udb.MutationAdd, st.key, st.val)
	case opReadConflict:
		err = tx.AddReadConflictRange(st.key, st.end)
	case opWriteConflict:
		err = tx.AddWriteConflictRange(st.key, st.end)
	}
	if err != nil {
		return fmt.Errorf("%v: %w", st, err)
	}
	st.done = true
	if st.kind.isRead() {
		s.stats.reads++
		if !t.rvKnown {
			rv, err := tx.GetReadVersion(ctx)
			if err != nil {
				return fmt.Errorf("GetReadVersion after a read: %w", err)
			}
			t.rv, t.rvKnown = rv, true
			s.tracef("T%d: read version v%d (taken by the read below)", t.id, rv)
		}
	}
	s.tracef("T%d: %v", t.id, st)
	return nil
}

func (s *schedule) finish(ctx context.Context, t *mtxn) error {
	tx := t.tx
	if t.cancel {
		tx.Cancel()
		t.status = statusCancelled
		s.stats.cancelled++
		s.tracef("T%d: cancelled", t.id)
		return nil
	}
	t.commitAfter = len(s.commitLog)
	if !t.rvKnown {
		// The commit takes the read version: it sees at least every commit
		// acknowledged so far.
		t.rvAfter = len(s.commitLog)
	}
	err := tx.Commit(ctx)
	switch {
	case err == nil:
		t.status = statusCommitted
		cv, err := tx.GetCommittedVersion()
		if err != nil {
			return fmt.Errorf("GetCommittedVersion: %w", err)
		}
		t.cv = cv
		if cv == -1 {
			s.stats.readOnly++
			s.tracef("T%d: committed read-only", t.id)
			return nil
		}
		s.commitLog = append(s.commitLog, t)
		s.stats.commits++
		s.tracef("T%d: committed at v%d", t.id, cv)
	case udb.HasCode(err, udb.CodeNotCommitted):
		t.status = statusConflict
		s.stats.conflicts++
		s.tracef("T%d: not_committed", t.id)
	default:
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// independentOf is what steps (a transaction's earlier steps) determine on
// their own, whatever the database holds: keys set or cleared, ranges cleared.
// Atomic operations keep a key's independence as it was.
func independentOf(steps []*mstep) []keyRange {
	var out []keyRange
	for _, st := range steps {
		switch st.kind {
		case opSet, opClear:
			out = append(out, pointRange(st.key))
		case opClearRange:
			out = append(out, keyRange{st.key, st.end})
		}
	}
	return out
}

// readSpan is the range a range read covered: [begin, end), trimmed at the
// last row returned when the limit was reached.
func (st *mstep) readSpan() keyRange {
	r := keyRange{st.key, st.end}
	if st.limit > 0 && len(st.rows) == st.limit {
		last := st.rows[len(st.rows)-1].Key
		if st.reverse {
			r.b = last
		} else {
			r.e = udb.KeyAfter(last)
		}
	}
	return r
}

// readRanges are t's read conflict ranges as FoundationDB computes them:
// serializable Gets and range reads (trimmed at the limit) and explicit read
// conflict ranges, leaving out the parts the transaction's own sets and
// clears determined (updateConflictMap).
func (t *mtxn) readRanges() []keyRange {
	var out []keyRange
	for _, st := range t.steps {
		if !st.done {
			continue
		}
		var r keyRange
		switch st.kind {
		case opGet:
			r = pointRange(st.key)
		case opRange:
			r = st.readSpan()
		case opReadConflict:
			r = keyRange{st.key, st.end}
		default:
			continue
		}
		// Keep the parts not determined by the transaction's own writes, as
		// pieces between the boundaries of those writes.
		cuts := [][]byte{r.b, r.e}
		for _, c := range st.independent {
			cuts = append(cuts, c.b, c.e)
		}
		slices.SortFunc(cuts, bytes.Compare)
		for i := 0; i+1 < len(cuts); i++ {
			p := keyRange{cuts[i], cuts[i+1]}.intersect(r)
			if !p.empty() && !p.coveredBy(st.independent) {
				out = append(out, p)
			}
		}
	}
	return out
}

// writeRanges are t's write conflict ranges: its mutations and explicit ones.
func (t *mtxn) writeRanges() []keyRange {
	var out []keyRange
	for _, st := range t.steps {
		if !st.done {
			continue
		}
		switch st.kind {
		case opSet, opClear, opAdd:
			out = append(out, pointRange(st.key))
		case opClearRange, opWriteConflict:
			out = append(out, keyRange{st.key, st.end})
		}
	}
	return out
}

func anyIntersect(a, b []keyRange) (keyRange, keyRange, bool) {
	for _, x := range a {
		for _, y := range b {
			if x.intersects(y) {
				return x, y, true
			}
		}
	}
	return keyRange{}, keyRange{}, false
}

// check is the oracle.
func (s *schedule) check() error {
	committed := slices.Clone(s.commitLog)
	sort.Slice(committed, func(i, j int) bool { return committed[i].cv < committed[j].cv })

	// Versions: commits are acknowledged in increasing version order, each
	// above its read version and the initial commit.
	for i, t := range s.commitLog {
		if t.cv <= s.initialV {
			return fmt.Errorf("transaction T%d committed at v%d, not after the initial commit v%d", t.id, t.cv, s.initialV)
		}
		if t.rvKnown && t.cv <= t.rv {
			return fmt.Errorf("transaction T%d committed at v%d, not after its read version v%d", t.id, t.cv, t.rv)
		}
		if i > 0 && t.cv <= s.commitLog[i-1].cv {
			return fmt.Errorf("transaction T%d committed at v%d after T%d at v%d: versions must increase", t.id, t.cv, s.commitLog[i-1].id, s.commitLog[i-1].cv)
		}
	}
	// External consistency: a read version covers every commit acknowledged
	// before it was taken.
	for _, t := range s.txns {
		if !t.rvKnown || t.setRV {
			continue
		}
		if t.rv < s.initialV {
			return fmt.Errorf("transaction T%d read version v%d is below the initial commit v%d", t.id, t.rv, s.initialV)
		}
		for _, u := range s.commitLog[:t.rvAfter] {
			if t.rv < u.cv {
				return fmt.Errorf("transaction T%d read version v%d misses T%d committed at v%d before it was taken", t.id, t.rv, u.id, u.cv)
			}
		}
	}

	// Snapshot isolation: every read equals the state at the read version
	// plus the transaction's own earlier writes.
	for _, t := range s.txns {
		if !t.rvKnown || t.tooOld {
			continue
		}
		state := cloneState(s.initial)
		for _, u := range committed {
			if u.cv <= t.rv {
				applyTxn(state, u)
			}
		}
		for i, st := range t.steps {
			if !st.done {
				break
			}
			if err := checkStep(state, st); err != nil {
				return fmt.Errorf("transaction T%d step %d %v: not the state at its read version v%d plus its own writes: %v", t.id, i, st, t.rv, err)
			}
		}
	}

	// Serializability: replay the read-write commits in version order.
	state := cloneState(s.initial)
	for _, t := range committed {
		for i, st := range t.steps {
			if !st.done {
				break
			}
			if st.kind == opSnapGet || st.kind == opSnapRange {
				continue
			}
			if err := checkStep(state, st); err != nil {
				return fmt.Errorf("transaction T%d (committed at v%d) step %d %v: differs from the serial order: %v", t.id, t.cv, i, st, err)
			}
		}
	}
	got, err := s.contents()
	if err != nil {
		return err
	}
	if want := fmtState(state); fmtState(got) != want {
		return fmt.Errorf("final state\n got  %s\n want %s (serial replay)", fmtState(got), want)
	}

	for _, t := range s.txns {
		switch {
		case t.status == statusConflict:
			// A conflict must have a cause: a commit acknowledged before t's
			// commit, after its read version, writing what t read.
			rv := t.rv
			if !t.rvKnown {
				rv = s.maxCV(t.rvAfter) // a lower bound on the read version
			}
			reads := t.readRanges()
			found := false
			for _, u := range s.commitLog[:t.commitAfter] {
				if u.cv > rv {
					if _, _, ok := anyIntersect(reads, u.writeRanges()); ok {
						found = true
						break
					}
				}
			}
			if !found {
				return fmt.Errorf("transaction T%d (read version v%d) failed with not_committed, but no transaction committed after v%d wrote a range it read (reads %s)", t.id, rv, rv, fmtRanges(reads))
			}
		case t.status == statusCommitted && t.cv > 0 && t.rvKnown:
			reads := t.readRanges()
			for _, u := range s.commitLog {
				if u.cv > t.rv && u.cv < t.cv {
					if r, w, ok := anyIntersect(reads, u.writeRanges()); ok {
						return fmt.Errorf("transaction T%d (read version v%d) committed at v%d, but T%d committed at v%d wrote %s, which intersects its read %s", t.id, t.rv, t.cv, u.id, u.cv, fmtRanges([]keyRange{w}), fmtRanges([]keyRange{r}))
					}
				}
			}
		}
	}
	return nil
}

func (s *schedule) maxCV(n int) int64 {
	v := s.initialV
	for _, u := range s.commitLog[:n] {
		v = max(v, u.cv)
	}
	return v
}

// contents reads the schedule's subspace from the newest version.
func (s *schedule) contents() (map[string][]byte, error) {
	ctx := context.Background()
	out, err := s.db.ReadTransact(ctx, func(tx udb.ReadTransaction) (any, error) {
		return tx.GetRange(udb.FirstGreaterOrEqual(s.prefix), udb.FirstGreaterOrEqual(s.end), udb.RangeOptions{}).All(ctx)
	})
	if err != nil {
		return nil, fmt.Errorf("reading final state: %w", err)
	}
	m := map[string][]byte{}
	for _, kv := range out.([]udb.KeyValue) {
		m[string(kv.Key)] = kv.Value
	}
	return m, nil
}

func cloneState(m map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func applyTxn(state map[string][]byte, t *mtxn) {
	for _, st := range t.steps {
		if st.done {
			applyStep(state, st)
		}
	}
}

// applyStep applies a write to the model; reads leave it unchanged.
func applyStep(state map[string][]byte, st *mstep) {
	switch st.kind {
	case opSet:
		state[string(st.key)] = append([]byte{}, st.val...)
	case opClear:
		delete(state, string(st.key))
	case opClearRange:
		for k := range state {
			if k >= string(st.key) && k < string(st.end) {
				delete(state, k)
			}
		}
	case opAdd:
		cur, ok := state[string(st.key)]
		v, keep := udb.ApplyAtomic(udb.MutationAdd, cur, ok, st.val)
		if keep {
			if v == nil {
				v = []byte{}
			}
			state[string(st.key)] = v
		} else {
			delete(state, string(st.key))
		}
	}
}

// checkStep compares a read with the model, then applies a write to it.
func checkStep(state map[string][]byte, st *mstep) error {
	switch st.kind {
	case opGet, opSnapGet:
		want, ok := state[string(st.key)]
		switch {
		case !ok && st.got != nil:
			return fmt.Errorf("got %x, want <absent>", st.got)
		case ok && st.got == nil:
			return fmt.Errorf("got <absent>, want %x", want)
		case ok && !bytes.Equal(st.got, want):
			return fmt.Errorf("got %x, want %x", st.got, want)
		}
	case opRange, opSnapRange:
		want := modelRange(state, st.key, st.end, st.limit, st.reverse)
		if fmtRows(st.rows) != fmtRows(want) {
			return fmt.Errorf("got %s, want %s", fmtRows(st.rows), fmtRows(want))
		}
	default:
		applyStep(state, st)
	}
	return nil
}

func modelRange(state map[string][]byte, begin, end []byte, limit int, reverse bool) []udb.KeyValue {
	var keys []string
	for k := range state {
		if k >= string(begin) && k < string(end) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	if reverse {
		slices.Reverse(keys)
	}
	if limit > 0 && len(keys) > limit {
		keys = keys[:limit]
	}
	var out []udb.KeyValue
	for _, k := range keys {
		out = append(out, udb.KeyValue{Key: []byte(k), Value: state[k]})
	}
	return out
}

func fmtState(m map[string][]byte) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%q:%x", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func fmtRanges(rs []keyRange) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("[%q, %q)", r.b, r.e))
	}
	return strings.Join(parts, " ")
}
