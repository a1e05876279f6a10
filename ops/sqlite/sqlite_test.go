package sqlite

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	_ "github.com/berthhq/berth/pkg/udb/driver/postgres"
)

var (
	bg     = context.Background()
	testNS = id.New(1)
)

// stores runs f on the embedded store and, when BERTH_TEST_POSTGRES_URL is set (`source
// .ci/postgres.sh`), on PostgreSQL in a schema of its own.
func stores(t *testing.T, f func(t *testing.T, db udb.Database)) {
	t.Run("embedded", func(t *testing.T) { f(t, opstest.Open(t)) })
	t.Run("postgres", func(t *testing.T) {
		base := os.Getenv("BERTH_TEST_POSTGRES_URL")
		if base == "" {
			t.Skip("BERTH_TEST_POSTGRES_URL is not set: no PostgreSQL server (`source .ci/postgres.sh` starts one)")
		}
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "sqlitetest_" + hex.EncodeToString(b[:])
		exec := func(sql string) error {
			c, err := pgx.Connect(bg, base)
			if err != nil {
				return err
			}
			defer c.Close(bg)
			_, err = c.Exec(bg, sql)
			return err
		}
		if err := exec("CREATE SCHEMA " + schema); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = exec("DROP SCHEMA " + schema + " CASCADE") })
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		db, err := udb.Open(bg, u.String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		f(t, db)
	})
}

// place records actor aid as placed (running) at generation gen.
func place(t testing.TB, db udb.Database, aid id.ID, gen uint32, phase keys.ActorPhase) {
	t.Helper()
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: keys.ActorStateVersion, Namespace: testNS, Phase: phase, Generation: gen, NextGeneration: gen + 1})
		return struct{}{}, nil
	})
}

func page(pgno uint32, size int) Page {
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(int(pgno)*31 + i)
	}
	return Page{Pgno: pgno, Bytes: b}
}

func pages(first, last uint32, size int) []Page {
	var out []Page
	for p := first; p <= last; p++ {
		out = append(out, page(p, size))
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func wantCode(t *testing.T, err error, code rerr.Code) {
	t.Helper()
	if !rerr.Is(err, code) {
		t.Fatalf("error %v, want %s", err, code)
	}
}

// readCheck reads pages 0..upTo and checks each against want (nil: missing).
func readCheck(t *testing.T, s *Store, f Fence, want map[uint32][]byte, upTo uint32) uint64 {
	t.Helper()
	var pgnos []uint32
	for p := uint32(0); p <= upTo; p++ {
		pgnos = append(pgnos, p)
	}
	out, err := s.GetPages(bg, GetPagesInput{Fence: f, Pgnos: pgnos})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Pages) != len(pgnos) {
		t.Fatalf("%d pages, want %d", len(out.Pages), len(pgnos))
	}
	for i, p := range out.Pages {
		if p.Pgno != pgnos[i] {
			t.Fatalf("page %d answered as %d", pgnos[i], p.Pgno)
		}
		if w := want[p.Pgno]; !bytes.Equal(p.Bytes, w) || (w == nil) != (p.Bytes == nil) {
			t.Fatalf("page %d: %d bytes (nil %v), want %d (nil %v)", p.Pgno, len(p.Bytes), p.Bytes == nil, len(w), w == nil)
		}
	}
	return out.HeadTxid
}

func TestCommitAndGetPages(t *testing.T) {
	stores(t, func(t *testing.T, db udb.Database) {
		s := &Store{DB: db}
		aid := id.New(1)
		place(t, db, aid, 3, keys.PhaseRunning)
		f := Fence{ActorID: aid, Generation: 3}

		// Nothing committed: every page missing, head 0.
		if h := readCheck(t, s, f, nil, 4); h != 0 {
			t.Fatalf("head %d, want 0", h)
		}
		// 4 KiB pages, a 64 KiB page (7 chunks), and a hole at page 3.
		big := page(4, MaxPageSize)
		out, err := s.Commit(bg, CommitInput{Fence: f, Pages: []Page{page(1, 4096), page(2, 4096), big}, DbSizePages: 5, NowMs: 10, ExpectedHead: ptr(uint64(0))})
		if err != nil || out.HeadTxid != 1 {
			t.Fatalf("commit: %v, head %d", err, out.HeadTxid)
		}
		want := map[uint32][]byte{1: page(1, 4096).Bytes, 2: page(2, 4096).Bytes, 4: big.Bytes}
		if h := readCheck(t, s, f, want, 7); h != 1 {
			t.Fatalf("head %d, want 1", h)
		}
		// Rewrite page 4 smaller: no chunk of the old value survives.
		if _, err := s.Commit(bg, CommitInput{Fence: f, Pages: []Page{page(4, 100)}, DbSizePages: 5, ExpectedHead: ptr(uint64(1))}); err != nil {
			t.Fatal(err)
		}
		want[4] = page(4, 100).Bytes
		readCheck(t, s, f, want, 7)
		// A stale expected head is refused and writes nothing.
		_, err = s.Commit(bg, CommitInput{Fence: f, Pages: []Page{page(1, 10)}, DbSizePages: 5, ExpectedHead: ptr(uint64(1))})
		wantCode(t, err, rerr.CodeSQLiteHeadMismatch)
		_, err = s.GetPages(bg, GetPagesInput{Fence: f, Pgnos: []uint32{1}, ExpectedHead: ptr(uint64(7))})
		wantCode(t, err, rerr.CodeSQLiteHeadMismatch)
		// Duplicate and unordered page numbers are answered in the request's order.
		got, err := s.GetPages(bg, GetPagesInput{Fence: f, Pgnos: []uint32{4, 1, 4}})
		if err != nil || len(got.Pages) != 3 || got.Pages[0].Pgno != 4 || got.Pages[1].Pgno != 1 || !bytes.Equal(got.Pages[2].Bytes, want[4]) {
			t.Fatalf("unordered read: %v %+v", err, got.Pages)
		}
		// Shrink to 1 page, grow back to 4: pages 2 and 4 are gone for good.
		if _, err := s.Commit(bg, CommitInput{Fence: f, DbSizePages: 1}); err != nil {
			t.Fatal(err)
		}
		h, err := s.Commit(bg, CommitInput{Fence: f, Pages: []Page{page(3, 4096)}, DbSizePages: 4})
		if err != nil || h.HeadTxid != 4 {
			t.Fatalf("grow: %v head %d", err, h.HeadTxid)
		}
		readCheck(t, s, f, map[uint32][]byte{1: want[1], 3: page(3, 4096).Bytes}, 5)
		// The pages are stored in chunks under the store's value limit.
		kvs := opstest.Read(t, db, func(r udb.ReadTransaction) ([]udb.KeyValue, error) {
			b, e := keys.ActorSQLiteRange(aid)
			return r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(bg)
		})
		for _, kv := range kvs {
			if len(kv.Value) > keys.ChunkSize {
				t.Fatalf("a stored value of %d bytes", len(kv.Value))
			}
		}
	})
}

func TestCommitLimits(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseRunning)
	f := Fence{ActorID: aid}
	for _, c := range []struct {
		name  string
		pages []Page
		code  rerr.Code
	}{
		{"page 0", []Page{{Pgno: 0, Bytes: []byte{1}}}, rerr.CodeSQLiteInvalidRequest},
		{"empty page", []Page{{Pgno: 1}}, rerr.CodeSQLiteInvalidRequest},
		{"twice", []Page{page(1, 10), page(1, 10)}, rerr.CodeSQLiteInvalidRequest},
		{"page too large", []Page{page(1, MaxPageSize+1)}, rerr.CodeSQLiteTooLarge},
		{"commit too large", pages(1, MaxCommitBytes/4096+1, 4096), rerr.CodeSQLiteTooLarge},
	} {
		_, err := s.Commit(bg, CommitInput{Fence: f, Pages: c.pages, DbSizePages: 100000})
		if !rerr.Is(err, c.code) {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
	_, err := s.GetPages(bg, GetPagesInput{Fence: f, Pgnos: make([]uint32, MaxGetPages+1)})
	wantCode(t, err, rerr.CodeSQLiteTooLarge)
	if h := opstest.Read(t, db, func(r udb.ReadTransaction) (Head, error) { return ReadHead(bg, r, aid) }); h.HeadTxid != 0 {
		t.Fatalf("a refused commit moved the head to %d", h.HeadTxid)
	}
}

func TestFence(t *testing.T) {
	stores(t, func(t *testing.T, db udb.Database) {
		s := &Store{DB: db}
		aid := id.New(1)
		place(t, db, aid, 1, keys.PhaseStarting)
		old := Fence{ActorID: aid, Generation: 1}
		if _, err := s.Commit(bg, CommitInput{Fence: old, Pages: []Page{page(1, 512)}, DbSizePages: 1}); err != nil {
			t.Fatal(err)
		}
		// The actor moves: generation 2 on another host. The old host can neither read
		// nor write; the new one sees what the old one committed.
		place(t, db, aid, 2, keys.PhaseRunning)
		_, err := s.Commit(bg, CommitInput{Fence: old, Pages: []Page{page(1, 10)}, DbSizePages: 1})
		wantCode(t, err, rerr.CodeSQLiteFenced)
		_, err = s.GetPages(bg, GetPagesInput{Fence: old, Pgnos: []uint32{1}})
		wantCode(t, err, rerr.CodeSQLiteFenced)
		_, err = s.StageBegin(bg, old, nil)
		wantCode(t, err, rerr.CodeSQLiteFenced)
		cur := Fence{ActorID: aid, Generation: 2}
		readCheck(t, s, cur, map[uint32][]byte{1: page(1, 512).Bytes}, 1)
		// Asleep, no placement writes; destroyed, the actor is gone.
		place(t, db, aid, 2, keys.PhaseSleeping)
		_, err = s.Commit(bg, CommitInput{Fence: cur, DbSizePages: 1})
		wantCode(t, err, rerr.CodeSQLiteFenced)
		place(t, db, aid, 2, keys.PhaseDestroyed)
		_, err = s.Commit(bg, CommitInput{Fence: cur, DbSizePages: 1})
		wantCode(t, err, rerr.CodeActorNotFound)
		_, err = s.Commit(bg, CommitInput{Fence: Fence{ActorID: id.New(1)}, DbSizePages: 1})
		wantCode(t, err, rerr.CodeActorNotFound)
		// The host check runs on the record.
		place(t, db, aid, 2, keys.PhaseRunning)
		errHost := rerr.SQLiteFenced(aid.String(), 2, "not this envoy")
		_, err = s.Commit(bg, CommitInput{Fence: Fence{ActorID: aid, Generation: 2, Host: func(context.Context, udb.ReadTransaction, keys.ActorState) error { return errHost }}, DbSizePages: 1})
		if !errors.Is(err, errHost) {
			t.Fatalf("host check: %v", err)
		}
	})
}

// TestFenceConflict: a commit whose transaction read the record before a move committed
// retries and is then refused.
func TestFenceConflict(t *testing.T) {
	db := opstest.Open(t)
	aid := id.New(1)
	place(t, db, aid, 1, keys.PhaseRunning)
	f := Fence{ActorID: aid, Generation: 1}
	tx, err := db.CreateTransaction()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Cancel()
	if _, err := Commit(bg, tx, CommitInput{Fence: f, Pages: []Page{page(1, 64)}, DbSizePages: 1}); err != nil {
		t.Fatal(err)
	}
	place(t, db, aid, 2, keys.PhaseRunning) // the move commits first
	err = tx.Commit(bg)
	var ue udb.Error
	if !errors.As(err, &ue) || ue.Code != 1020 {
		t.Fatalf("commit after the move: %v, want not_committed (1020)", err)
	}
	if err := tx.OnError(bg, err); err != nil {
		t.Fatal(err)
	}
	_, err = Commit(bg, tx, CommitInput{Fence: f, Pages: []Page{page(1, 64)}, DbSizePages: 1})
	wantCode(t, err, rerr.CodeSQLiteFenced)
}

func TestStagedCommit(t *testing.T) {
	stores(t, func(t *testing.T, db udb.Database) {
		s := &Store{DB: db}
		aid := id.New(1)
		place(t, db, aid, 0, keys.PhaseRunning)
		f := Fence{ActorID: aid}
		if _, err := s.Commit(bg, CommitInput{Fence: f, Pages: pages(1, 4, 4096), DbSizePages: 4}); err != nil {
			t.Fatal(err)
		}
		// 8.6 MB in three segments: more than one commit or one transaction may hold,
		// and more chunks than one apply batch moves.
		b, err := s.StageBegin(bg, f, ptr(uint64(1)))
		if err != nil || b.Txid != 2 {
			t.Fatalf("begin: %v txid %d", err, b.Txid)
		}
		const per = 700 // pages of 4095 bytes per segment
		var firsts []uint32
		for i := uint32(0); i < 3; i++ {
			first := 1 + i*per
			out, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 2, FirstPgno: first, Pages: pages(first, first+per-1, 4095)})
			if err != nil || out.StagedBytes != uint64(i+1)*per*4095 {
				t.Fatalf("segment %d: %v, staged %d", i, err, out.StagedBytes)
			}
			firsts = append(firsts, first)
		}
		// Invisible until finalized.
		old := map[uint32][]byte{}
		for _, p := range pages(1, 4, 4096) {
			old[p.Pgno] = p.Bytes
		}
		if h := readCheck(t, s, f, old, 6); h != 1 {
			t.Fatalf("head %d before finalize", h)
		}
		fin, err := s.StageFinalize(bg, StageFinalizeInput{Fence: f, Txid: 2, NewDbSizePages: 3 * per, SegmentFirstPgnos: firsts})
		if err != nil || fin.HeadTxid != 2 {
			t.Fatalf("finalize: %v head %d", err, fin.HeadTxid)
		}
		want := map[uint32][]byte{}
		for _, p := range pages(1, 3*per, 4095) {
			want[p.Pgno] = p.Bytes
		}
		if h := readCheck(t, s, f, want, 3*per+1); h != 2 {
			t.Fatalf("head %d after finalize", h)
		}
		// Nothing of the stage is left.
		n := opstest.Read(t, db, func(r udb.ReadTransaction) (int, error) {
			b, e := keys.SQLiteStagesRange(aid)
			kvs, err := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(bg)
			return len(kvs), err
		})
		if n != 0 {
			t.Fatalf("%d stage rows left", n)
		}
	})
}

func TestStagedCommitRefusals(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 5, keys.PhaseRunning)
	f := Fence{ActorID: aid, Generation: 5}
	_, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: 1, Pages: pages(1, 1, 10)})
	wantCode(t, err, rerr.CodeSQLiteStageNotFound)
	if _, err := s.StageBegin(bg, f, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: 10, Pages: pages(10, 12, 10)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		first uint32
		pages []Page
	}{
		{"overlapping", 12, pages(12, 13, 10)},
		{"descending", 5, pages(5, 6, 10)},
		{"page before first", 20, pages(19, 21, 10)},
	} {
		_, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: c.first, Pages: c.pages})
		if !rerr.Is(err, rerr.CodeSQLiteInvalidRequest) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	_, err = s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 2, FirstPgno: 20, Pages: pages(20, 20, 10)})
	wantCode(t, err, rerr.CodeSQLiteStageNotFound)
	if _, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: 20, Pages: pages(20, 21, 10)}); err != nil {
		t.Fatal(err)
	}
	// Finalize must list exactly what was staged.
	for _, firsts := range [][]uint32{{10}, {10, 20, 30}, {10, 10, 20}, {}} {
		_, err := s.StageFinalize(bg, StageFinalizeInput{Fence: f, Txid: 1, NewDbSizePages: 21, SegmentFirstPgnos: firsts})
		if !rerr.Is(err, rerr.CodeSQLiteInvalidRequest) {
			t.Errorf("finalize %v: %v", firsts, err)
		}
	}
	// A single commit takes txid 1 and discards the stage.
	if _, err := s.Commit(bg, CommitInput{Fence: f, Pages: pages(1, 1, 10), DbSizePages: 1}); err != nil {
		t.Fatal(err)
	}
	_, err = s.StageFinalize(bg, StageFinalizeInput{Fence: f, Txid: 1, NewDbSizePages: 21, SegmentFirstPgnos: []uint32{10, 20}})
	wantCode(t, err, rerr.CodeSQLiteStageNotFound)
	readCheck(t, s, f, map[uint32][]byte{1: page(1, 10).Bytes}, 25)
	// A stage begun by one generation is not the next generation's.
	if _, err := s.StageBegin(bg, f, nil); err != nil {
		t.Fatal(err)
	}
	place(t, db, aid, 6, keys.PhaseRunning)
	_, err = s.StageSegment(bg, StageSegmentInput{Fence: Fence{ActorID: aid, Generation: 6}, Txid: 2, FirstPgno: 1, Pages: pages(1, 1, 10)})
	wantCode(t, err, rerr.CodeSQLiteStageNotFound)
}

func TestAbandonedStageSwept(t *testing.T) {
	db := opstest.Open(t)
	now := int64(1_000_000)
	s := &Store{DB: db, NowMs: func() int64 { return now }}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseRunning)
	f := Fence{ActorID: aid}
	if _, err := s.StageBegin(bg, f, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: 1, Pages: pages(1, 50, 4096)}); err != nil {
		t.Fatal(err)
	}
	rows := func() int {
		return opstest.Read(t, db, func(r udb.ReadTransaction) (int, error) {
			b, e := keys.SQLiteStagesRange(aid)
			kvs, err := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(bg)
			if err != nil {
				return 0, err
			}
			b, e = keys.SQLiteStageIdxBefore(1 << 62)
			idx, err := r.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(e), udb.RangeOptions{}).All(bg)
			return len(kvs) + len(idx), err
		})
	}
	if n, err := s.Sweep(bg, 10); err != nil || n != 0 || rows() == 0 {
		t.Fatalf("a young stage swept: %v %d", err, n)
	}
	now += StageMaxAge.Milliseconds() + 1
	if n, err := s.Sweep(bg, 10); err != nil || n != 1 {
		t.Fatalf("sweep: %v %d", err, n)
	}
	if n := rows(); n != 0 {
		t.Fatalf("%d rows of the abandoned stage left", n)
	}
	_, err := s.StageFinalize(bg, StageFinalizeInput{Fence: f, Txid: 1, NewDbSizePages: 50, SegmentFirstPgnos: []uint32{1}})
	wantCode(t, err, rerr.CodeSQLiteStageNotFound)
	readCheck(t, s, f, nil, 3)
}

// TestApplyResumes: a finalize whose apply never ran (the engine stopped after finalize's
// transaction) is finished by the next read, which sees the whole commit.
func TestApplyResumes(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseRunning)
	f := Fence{ActorID: aid}
	if _, err := s.StageBegin(bg, f, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StageSegment(bg, StageSegmentInput{Fence: f, Txid: 1, FirstPgno: 1, Pages: pages(1, 600, 1000)}); err != nil {
		t.Fatal(err)
	}
	opstest.Write(t, db, func(tx udb.Transaction) (StageFinalizeOutput, error) {
		return StageFinalize(bg, tx, StageFinalizeInput{Fence: f, Txid: 1, NewDbSizePages: 599, SegmentFirstPgnos: []uint32{1}})
	})
	_, err := opstest.Transact(db, func(tx udb.Transaction) (CommitOutput, error) {
		return Commit(bg, tx, CommitInput{Fence: f, DbSizePages: 1})
	})
	if !errors.Is(err, ErrApplyPending) {
		t.Fatalf("commit during apply: %v", err)
	}
	want := map[uint32][]byte{}
	for _, p := range pages(1, 599, 1000) {
		want[p.Pgno] = p.Bytes
	}
	if h := readCheck(t, s, f, want, 600); h != 1 {
		t.Fatalf("head %d", h)
	}
}

// TestSurvivesRestart: pages committed to a file store are there after it is reopened.
func TestSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() udb.Database {
		db, err := udb.Open(bg, "file://"+dir)
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	db := open()
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseRunning)
	f := Fence{ActorID: aid}
	if _, err := (&Store{DB: db}).Commit(bg, CommitInput{Fence: f, Pages: pages(1, 3, 4096), DbSizePages: 3}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = open()
	defer db.Close()
	want := map[uint32][]byte{}
	for _, p := range pages(1, 3, 4096) {
		want[p.Pgno] = p.Bytes
	}
	if h := readCheck(t, &Store{DB: db}, f, want, 3); h != 1 {
		t.Fatalf("head %d", h)
	}
}

func TestDropAll(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid, other := id.New(1), id.New(1)
	for _, a := range []id.ID{aid, other} {
		place(t, db, a, 0, keys.PhaseRunning)
		if _, err := s.Commit(bg, CommitInput{Fence: Fence{ActorID: a}, Pages: pages(1, 2, 100), DbSizePages: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.StageBegin(bg, Fence{ActorID: aid}, nil); err != nil {
		t.Fatal(err)
	}
	opstest.Write(t, db, func(tx udb.Transaction) (struct{}, error) { return struct{}{}, DropAll(bg, tx, aid) })
	readCheck(t, s, Fence{ActorID: aid}, nil, 2)
	readCheck(t, s, Fence{ActorID: other}, map[uint32][]byte{1: page(1, 100).Bytes, 2: page(2, 100).Bytes}, 2)
	if n, _ := s.Sweep(bg, 10); n != 0 {
		t.Fatalf("DropAll left %d stage index entries", n)
	}
}
