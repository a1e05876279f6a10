package sqlite

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

func head(t *testing.T, db udb.Database, aid id.ID) Head {
	t.Helper()
	return opstest.Read(t, db, func(r udb.ReadTransaction) (Head, error) { return ReadHead(bg, r, aid) })
}

// SQL against a sleeping actor writes its pages; the rows are there for the next run, as
// typed columns.
func TestExecWhileAsleep(t *testing.T) {
	stores(t, func(t *testing.T, db udb.Database) {
		s := &Store{DB: db}
		aid := id.New(1)
		place(t, db, aid, 4, keys.PhaseSleeping)
		f := Fence{ActorID: aid, Generation: 4}
		out, err := s.Exec(bg, ExecInput{Fence: f, Script: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB); INSERT INTO t (name, score, data) VALUES ('a', 1.5, x'0001')"})
		if err != nil || out.ReadOnly || out.HeadTxid != 1 {
			t.Fatalf("create: %v %+v", err, out)
		}
		if h := head(t, db, aid); h.HeadTxid != 1 || h.DbSizePages < 2 {
			t.Fatalf("head after create %+v", h)
		}
		out, err = s.Exec(bg, ExecInput{Fence: f, Statements: []Statement{{SQL: "INSERT INTO t (name, score, data) VALUES (?, ?, ?)", Params: []any{"b", 2.25, []byte{9}}}}})
		if err != nil || len(out.Results) != 1 || out.Results[0].Changes != 1 || out.Results[0].LastInsertRowID == nil || *out.Results[0].LastInsertRowID != 2 {
			t.Fatalf("insert: %v %+v", err, out)
		}
		out, err = s.Exec(bg, ExecInput{Fence: f, Statements: []Statement{{SQL: "SELECT id, name, score, data, NULL AS n FROM t WHERE id >= ? ORDER BY id", Params: []any{int64(1)}}}})
		if err != nil {
			t.Fatal(err)
		}
		r := out.Results[0]
		want := [][]any{{int64(1), "a", 1.5, []byte{0, 1}, nil}, {int64(2), "b", 2.25, []byte{9}, nil}}
		if len(r.Columns) != 5 || r.Columns[1] != "name" || len(r.Rows) != 2 || r.Changes != 0 || r.LastInsertRowID != nil {
			t.Fatalf("select %+v", r)
		}
		for i, row := range r.Rows {
			for j, v := range row {
				if b, ok := v.([]byte); ok {
					if !bytes.Equal(b, want[i][j].([]byte)) {
						t.Fatalf("row %d col %d: %v", i, j, v)
					}
				} else if v != want[i][j] {
					t.Fatalf("row %d col %d: %#v, want %#v", i, j, v, want[i][j])
				}
			}
		}
		if out.HeadTxid != 2 || head(t, db, aid).HeadTxid != 2 {
			t.Fatalf("a read moved the head: %d", out.HeadTxid)
		}
		// A batch runs in one transaction: a failing statement leaves nothing.
		_, err = s.Exec(bg, ExecInput{Fence: f, Statements: []Statement{
			{SQL: "INSERT INTO t (name) VALUES ('c')"}, {SQL: "INSERT INTO nope VALUES (1)"}}})
		wantCode(t, err, rerr.CodeSQLiteStatementFailed)
		out, err = s.Exec(bg, ExecInput{Fence: f, Script: "SELECT count(*) FROM t"})
		if err != nil || out.Results[0].Rows[0][0] != int64(2) {
			t.Fatalf("after the failed batch: %v %+v", err, out)
		}
		// Another generation is fenced.
		_, err = s.Exec(bg, ExecInput{Fence: Fence{ActorID: aid, Generation: 3}, Script: "SELECT 1"})
		wantCode(t, err, rerr.CodeSQLiteFenced)
	})
}

// While the actor runs, SQL is read-only unless its host asks; a host's write commits
// under the host's fence.
func TestExecWhileRunning(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseSleeping)
	f := Fence{ActorID: aid}
	if _, err := s.Exec(bg, ExecInput{Fence: f, Script: "CREATE TABLE t (v); INSERT INTO t VALUES (1)"}); err != nil {
		t.Fatal(err)
	}
	place(t, db, aid, 0, keys.PhaseRunning)
	notHost := Fence{ActorID: aid, Host: func(context.Context, udb.ReadTransaction, keys.ActorState) error {
		return rerr.SQLiteFenced(aid.String(), 0, "another envoy")
	}}
	for _, fc := range []Fence{f, notHost} {
		out, err := s.Exec(bg, ExecInput{Fence: fc, Script: "SELECT v FROM t"})
		if err != nil || !out.ReadOnly || out.Results[0].Rows[0][0] != int64(1) {
			t.Fatalf("read while running: %v %+v", err, out)
		}
		_, err = s.Exec(bg, ExecInput{Fence: fc, Script: "INSERT INTO t VALUES (2)"})
		wantCode(t, err, rerr.CodeSQLiteReadOnly)
	}
	host := Fence{ActorID: aid, Host: func(context.Context, udb.ReadTransaction, keys.ActorState) error { return nil }}
	out, err := s.Exec(bg, ExecInput{Fence: host, Statements: []Statement{{SQL: "INSERT INTO t VALUES (?)", Params: []any{int64(3)}}}})
	if err != nil || out.ReadOnly || out.Results[0].Changes != 1 || out.HeadTxid != 2 {
		t.Fatalf("host write: %v %+v", err, out)
	}
	// Any other error of the host check ends the run.
	boom := errors.New("boom")
	_, err = s.Exec(bg, ExecInput{Fence: Fence{ActorID: aid, Host: func(context.Context, udb.ReadTransaction, keys.ActorState) error { return boom }}, Script: "SELECT 1"})
	if !errors.Is(err, boom) {
		t.Fatalf("host error: %v", err)
	}
}

// A write larger than one commit goes through a staged commit; the pages the envoy reads
// afterwards are those of the database SQLite wrote.
func TestExecLargeWriteStaged(t *testing.T) {
	defer func(c, s int) { execCommitBytes, execSegmentBytes = c, s }(execCommitBytes, execSegmentBytes)
	execCommitBytes, execSegmentBytes = 64<<10, 20<<10 // so that a small database is staged in many segments
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseSleeping)
	f := Fence{ActorID: aid}
	_, err := s.Exec(bg, ExecInput{Fence: f, Script: "CREATE TABLE b (x BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 9) INSERT INTO b SELECT randomblob(20000) FROM n"})
	if err != nil {
		t.Fatal(err)
	}
	h := head(t, db, aid)
	if h.DbSizePages*4096 < 180_000 || h.HeadTxid != 1 {
		t.Fatalf("head %+v", h)
	}
	out, err := s.Exec(bg, ExecInput{Fence: f, Script: "SELECT count(*), sum(length(x)) FROM b"})
	if err != nil || out.Results[0].Rows[0][0] != int64(9) || out.Results[0].Rows[0][1] != int64(180_000) {
		t.Fatalf("read back: %v %+v", err, out)
	}
}

// ReadOnly makes a run read-only even where it could write (the actor sleeps).
func TestExecReadOnly(t *testing.T) {
	db := opstest.Open(t)
	s := &Store{DB: db}
	aid := id.New(1)
	place(t, db, aid, 0, keys.PhaseSleeping)
	f := Fence{ActorID: aid}
	if _, err := s.Exec(bg, ExecInput{Fence: f, Script: "CREATE TABLE t (v); INSERT INTO t VALUES (1)"}); err != nil {
		t.Fatal(err)
	}
	out, err := s.Exec(bg, ExecInput{Fence: f, Script: "SELECT v FROM t", ReadOnly: true})
	if err != nil || !out.ReadOnly || out.Results[0].Rows[0][0] != int64(1) {
		t.Fatalf("read-only read: %v %+v", err, out)
	}
	_, err = s.Exec(bg, ExecInput{Fence: f, Script: "INSERT INTO t VALUES (2)", ReadOnly: true})
	wantCode(t, err, rerr.CodeSQLiteReadOnly)
	if h := head(t, db, aid).HeadTxid; h != out.HeadTxid {
		t.Fatalf("a refused write moved the head: %d to %d", out.HeadTxid, h)
	}
}
