package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	sqlitedrv "modernc.org/sqlite"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// SQL run by the engine (SqliteExec, SqliteExecute, SqliteExecuteBatch: rivetkit's remote
// SQLite, and inspection). The database is materialised: every page of the head is read in
// one transaction and written to a temporary file, which the embedded SQLite
// (modernc.org/sqlite, pure Go) opens; the file is removed afterwards. A read-only run sets
// query_only, so a write fails with sqlite.read_only. A writable run compares the file's
// pages with those read and commits the changed ones and the new size, fenced on the
// generation and on the head that was read (a concurrent commit makes it fail with
// sqlite.head_mismatch), as a single or a staged commit by size. The cost is linear in the
// database size, bounded by MaxExecDbBytes; a VFS reading pages on demand would avoid it.
//
// Who may write: the actor's own envoy while it hosts the generation asked for (remote
// SQLite: the engine is the actor's SQLite), or anyone while the actor is on no host (it
// sleeps). SQL for a generation that is placed elsewhere runs read-only, so the host's
// cached pages never go stale under it.

// MaxExecDbBytes bounds the database size SQL may be run against.
const MaxExecDbBytes = 256 << 20

// The sizes at which a run's write is staged and split into segments (tests lower them).
var (
	execCommitBytes  = MaxCommitBytes
	execSegmentBytes = MaxSegmentBytes
)

// Statement is one SQL statement and its bound parameters: nil, int64, float64, string or
// []byte each.
type Statement struct {
	SQL    string
	Params []any
}

// Result is one statement's result. Row values are nil, int64, float64, string or []byte.
type Result struct {
	Columns         []string
	Rows            [][]any
	Changes         int64
	LastInsertRowID *int64
}

// ExecInput runs SQL against the fenced actor's database.
type ExecInput struct {
	// Fence names the actor and the generation; its Host check, when it passes, makes the
	// caller the actor's host.
	Fence Fence
	// Script, when set, is SQL text of one or more statements without parameters
	// (SqliteExec): the result is that of the last statement. Otherwise Statements run in
	// order, in one transaction when there are several (SqliteExecuteBatch).
	Script     string
	Statements []Statement
	NowMs      int64
	// ReadOnly runs the SQL read-only whatever the actor's placement (inspection): a write
	// fails with sqlite.read_only.
	ReadOnly bool
}

// ExecOutput holds one Result per statement (one for a script) and the head after the run.
type ExecOutput struct {
	Results  []Result
	HeadTxid uint64
	ReadOnly bool
}

// snapshotDB is what Exec reads of the database.
type snapshotDB struct {
	head     keys.SQLiteMeta
	pages    map[uint32][]byte
	writable bool
	online   bool // the writer is the host (else: the actor is on no host)
}

// Exec runs the statements (see the comment at the top of this file).
func (s *Store) Exec(ctx context.Context, in ExecInput) (ExecOutput, error) {
	snap, err := retryApply(ctx, s, in.Fence.ActorID, func() (snapshotDB, error) {
		return udb.ReadTransact(ctx, s.DB, func(r udb.ReadTransaction) (snapshotDB, error) {
			return readSnapshot(ctx, r, in.Fence)
		})
	})
	if err != nil {
		return ExecOutput{}, err
	}
	if in.ReadOnly {
		snap.writable = false
	}
	pageSize := 4096
	if p1 := snap.pages[1]; len(p1) >= 100 {
		if ps := int(binary.BigEndian.Uint16(p1[16:18])); ps == 1 {
			pageSize = 65536
		} else if ps >= 512 {
			pageSize = ps
		}
	}
	f, err := os.CreateTemp("", "berth-sqlite-*.db")
	if err != nil {
		return ExecOutput{}, rerr.Internal(err)
	}
	path := f.Name()
	defer func() {
		for _, sfx := range []string{"", "-journal", "-wal", "-shm"} {
			_ = os.Remove(path + sfx)
		}
	}()
	var journalBytes [2]byte
	for pg := uint32(1); pg <= snap.head.DbSizePages; pg++ {
		b := snap.pages[pg]
		if len(b) != pageSize {
			b = append(bytes.Clone(b), make([]byte, max(0, pageSize-len(b)))...)[:pageSize]
		}
		if pg == 1 && len(b) >= 20 {
			// A WAL-mode header would make SQLite look for a -wal file: the copy runs in
			// rollback mode, and the header's bytes are put back before writing.
			copy(journalBytes[:], b[18:20])
			b = bytes.Clone(b)
			b[18], b[19] = 1, 1
		}
		if _, err := f.WriteAt(b, int64(pg-1)*int64(pageSize)); err != nil {
			f.Close()
			return ExecOutput{}, rerr.Internal(err)
		}
	}
	if err := f.Close(); err != nil {
		return ExecOutput{}, rerr.Internal(err)
	}
	results, err := runSQL(ctx, path, in, !snap.writable)
	if err != nil {
		return ExecOutput{}, err
	}
	out := ExecOutput{Results: results, HeadTxid: snap.head.HeadTxid, ReadOnly: !snap.writable}
	if !snap.writable {
		return out, nil
	}
	dirty, size, err := diffFile(path, pageSize, snap, journalBytes)
	if err != nil {
		return ExecOutput{}, err
	}
	if len(dirty) == 0 && size == snap.head.DbSizePages {
		return out, nil
	}
	fence := in.Fence
	fence.Offline = !snap.online
	if !snap.online {
		fence.Host = nil
	}
	head, err := s.write(ctx, fence, dirty, size, snap.head.HeadTxid, in.NowMs)
	out.HeadTxid = head
	return out, err
}

// readSnapshot reads the fence, the head and every page, and decides whether the run may
// write.
func readSnapshot(ctx context.Context, r udb.ReadTransaction, f Fence) (snapshotDB, error) {
	st, err := checkFence(ctx, r, f, true)
	if err != nil {
		return snapshotDB{}, err
	}
	var snap snapshotDB
	switch {
	case !placed(st.Phase):
		snap.writable = true
	case f.Host != nil:
		err := f.Host(ctx, r, st)
		switch {
		case err == nil:
			snap.writable, snap.online = true, true
		case rerr.Is(err, rerr.CodeSQLiteFenced):
			// Placed on another envoy: read-only.
		default:
			return snapshotDB{}, err
		}
	}
	m, err := loadMeta(ctx, r, f.ActorID)
	if err != nil {
		return snapshotDB{}, err
	}
	if m.Apply != nil {
		return snapshotDB{}, ErrApplyPending
	}
	snap.head = m
	snap.pages = map[uint32][]byte{}
	if m.DbSizePages == 0 {
		return snap, nil
	}
	prefix := keys.SQLitePagesPrefix(f.ActorID)
	begin, end := keys.SQLitePageRange(f.ActorID, 1, m.DbSizePages)
	it := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll})
	total := 0
	for it.Next(ctx) {
		kv := it.KeyValue()
		row, err := keys.ParseSQLitePageRow(prefix, kv.Key)
		if err != nil {
			return snapshotDB{}, corrupt.Mark("sqlite", err)
		}
		total += len(kv.Value)
		if total > MaxExecDbBytes {
			return snapshotDB{}, errTooLarge("SQL runs against databases of at most %d bytes", MaxExecDbBytes)
		}
		snap.pages[row.Pgno] = append(snap.pages[row.Pgno], kv.Value...)
	}
	return snap, it.Err()
}

// runSQL opens the file and runs the statements.
func runSQL(ctx context.Context, path string, in ExecInput, readOnly bool) ([]Result, error) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, rerr.Internal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, rerr.Internal(err)
	}
	defer conn.Close()
	if readOnly {
		if _, err := conn.ExecContext(ctx, "PRAGMA query_only = ON"); err != nil {
			return nil, rerr.Internal(err)
		}
	}
	if in.Script != "" || len(in.Statements) == 0 {
		res, err := runStatement(ctx, conn, Statement{SQL: in.Script}, readOnly)
		if err != nil {
			return nil, err
		}
		return []Result{res}, nil
	}
	batch := len(in.Statements) > 1
	if batch {
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
			return nil, sqlErr(err, readOnly)
		}
	}
	out := make([]Result, 0, len(in.Statements))
	for i, st := range in.Statements {
		res, err := runStatement(ctx, conn, st, readOnly)
		if err != nil {
			if batch {
				_, _ = conn.ExecContext(ctx, "ROLLBACK")
				return nil, fmt.Errorf("statement %d: %w", i, err)
			}
			return nil, err
		}
		out = append(out, res)
	}
	if batch {
		if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
			return nil, sqlErr(err, readOnly)
		}
	}
	return out, nil
}

func runStatement(ctx context.Context, conn *sql.Conn, st Statement, readOnly bool) (Result, error) {
	var before, after struct{ total, rowid int64 }
	counters := func(v *struct{ total, rowid int64 }) error {
		return conn.QueryRowContext(ctx, "SELECT total_changes(), last_insert_rowid()").Scan(&v.total, &v.rowid)
	}
	if err := counters(&before); err != nil {
		return Result{}, rerr.Internal(err)
	}
	rows, err := conn.QueryContext(ctx, st.SQL, st.Params...)
	if err != nil {
		return Result{}, sqlErr(err, readOnly)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Result{}, sqlErr(err, readOnly)
	}
	res := Result{Columns: cols, Rows: [][]any{}}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return Result{}, sqlErr(err, readOnly)
		}
		for i, v := range vals {
			vals[i] = columnValue(v)
		}
		res.Rows = append(res.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return Result{}, sqlErr(err, readOnly)
	}
	rows.Close()
	if err := counters(&after); err != nil {
		return Result{}, rerr.Internal(err)
	}
	res.Changes = after.total - before.total
	if after.rowid != before.rowid {
		id := after.rowid
		res.LastInsertRowID = &id
	}
	return res, nil
}

// columnValue normalises a scanned value to nil, int64, float64, string or []byte.
func columnValue(v any) any {
	switch v := v.(type) {
	case nil, int64, float64, string, []byte:
		return v
	case bool:
		if v {
			return int64(1)
		}
		return int64(0)
	case time.Time:
		return v.Format("2006-01-02 15:04:05.999999999-07:00")
	default:
		return fmt.Sprint(v)
	}
}

// sqlErr maps an SQLite error: a write refused by query_only is sqlite.read_only, any other
// is sqlite.statement_failed with SQLite's message.
func sqlErr(err error, readOnly bool) error {
	msg := err.Error()
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		msg = se.Error()
	}
	if readOnly && (strings.Contains(msg, "readonly") || strings.Contains(msg, "read-only") || strings.Contains(msg, "query_only")) {
		return rerr.SQLiteReadOnly(msg)
	}
	return rerr.SQLiteStatementFailed(msg)
}

// diffFile returns the pages of the file that differ from those read, and its size in pages.
func diffFile(path string, pageSize int, snap snapshotDB, journal [2]byte) ([]Page, uint32, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, rerr.Internal(err)
	}
	if len(b)%pageSize != 0 {
		// The page size changed (a VACUUM with a new page_size): take it from the header.
		if len(b) >= 100 {
			if ps := int(binary.BigEndian.Uint16(b[16:18])); ps >= 512 {
				pageSize = ps
			} else if ps == 1 {
				pageSize = 65536
			}
		}
		if len(b)%pageSize != 0 {
			return nil, 0, rerr.Internal(fmt.Errorf("sqlite: database file of %d bytes is not whole pages of %d", len(b), pageSize))
		}
	}
	size := uint32(len(b) / pageSize)
	var dirty []Page
	for pg := uint32(1); pg <= size; pg++ {
		p := b[int(pg-1)*pageSize : int(pg)*pageSize]
		if pg == 1 && journal != [2]byte{} {
			p[18], p[19] = journal[0], journal[1]
		}
		if !bytes.Equal(p, snap.pages[pg]) {
			dirty = append(dirty, Page{Pgno: pg, Bytes: p})
		}
	}
	return dirty, size, nil
}

// write commits pages and the size at expected head: one commit, or a staged one when they
// are too large for it.
func (s *Store) write(ctx context.Context, f Fence, pages []Page, size uint32, head uint64, nowMs int64) (uint64, error) {
	total := 0
	for _, p := range pages {
		total += len(p.Bytes)
	}
	if total <= execCommitBytes {
		out, err := s.Commit(ctx, CommitInput{Fence: f, Pages: pages, DbSizePages: size, NowMs: nowMs, ExpectedHead: &head})
		return out.HeadTxid, err
	}
	b, err := s.StageBegin(ctx, f, &head)
	if err != nil {
		return 0, err
	}
	var firsts []uint32
	for i := 0; i < len(pages); {
		j, n := i, 0
		for j < len(pages) && (j == i || n+len(pages[j].Bytes) <= execSegmentBytes) {
			n += len(pages[j].Bytes)
			j++
		}
		if _, err := s.StageSegment(ctx, StageSegmentInput{Fence: f, Txid: b.Txid, FirstPgno: pages[i].Pgno, Pages: pages[i:j]}); err != nil {
			return 0, err
		}
		firsts = append(firsts, pages[i].Pgno)
		i = j
	}
	out, err := s.StageFinalize(ctx, StageFinalizeInput{Fence: f, Txid: b.Txid, NewDbSizePages: size, NowMs: nowMs, SegmentFirstPgnos: firsts})
	return out.HeadTxid, err
}
