package ui

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/ops/actor"
	opsqlite "github.com/berthhq/berth/ops/sqlite"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Bounds of /ui/actor-sqlite.
const (
	defaultSQLRows = 50
	maxSQLRows     = 200
	maxSQLTables   = 500
	maxCellBytes   = 256     // bytes of a text or blob cell sent; longer ones are cut
	maxSQLBytes    = 1 << 20 // bytes of cells in one answer; rows past it are left out
)

// sqlTable is one table of an actor's database.
type sqlTable struct {
	Name string `json:"name"`
	SQL  string `json:"sql"`
}

// sqlPage is the body of /ui/actor-sqlite: the tables, and with ?table= a page of its rows.
// A text cell is a string, a blob {"base64": …}; both are cut to maxCellBytes ("cut": true).
type sqlPage struct {
	Tables  []sqlTable `json:"tables"`
	Table   string     `json:"table,omitempty"`
	Columns []string   `json:"columns,omitempty"`
	Rows    [][]any    `json:"rows,omitempty"`
	Offset  int        `json:"offset"`
	// Next is the offset of the next page, null after the last one.
	Next *int `json:"next"`
}

// serveActorSQLite answers GET /ui/actor-sqlite?actor_id=&table=&offset=&limit= for an
// actor of this datacenter: its SQLite tables, and a page of one table's rows, read from a
// read-only copy of its database (ops/sqlite). Admin tokens only: rows are application data.
func serveActorSQLite(w http.ResponseWriter, r *http.Request, o Options) {
	if g := auth.FromContext(r.Context()); g.AllowAPI(http.MethodPost) != nil {
		writeError(w, r, rerr.APIForbidden())
		return
	}
	q := r.URL.Query()
	offset, limit := 0, defaultSQLRows
	for _, f := range []struct {
		name     string
		dst      *int
		min, max int
	}{{"offset", &offset, 0, 1 << 30}, {"limit", &limit, 1, maxSQLRows}} {
		if s := q.Get(f.name); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < f.min || n > f.max {
				writeError(w, r, rerr.BadRequest(f.name, "an integer from "+strconv.Itoa(f.min)+" to "+strconv.Itoa(f.max)))
				return
			}
			*f.dst = n
		}
	}
	aid, st, ok := readActor(w, r, o, func(rt udb.ReadTransaction, aid id.ID) (actor.Status, error) {
		st, _, err := actor.Lookup(r.Context(), rt, aid)
		return st, err
	})
	if !ok {
		return
	}
	store := &opsqlite.Store{DB: o.DB}
	fence := opsqlite.Fence{ActorID: aid, Generation: st.Generation}
	stmts := []opsqlite.Statement{{SQL: "SELECT name, sql FROM sqlite_schema WHERE type = 'table' ORDER BY name LIMIT ?", Params: []any{int64(maxSQLTables)}}}
	table := q.Get("table")
	if table != "" {
		// The name is matched against the schema in SQL, then quoted: it is never SQL itself.
		stmts = append(stmts, opsqlite.Statement{
			SQL:    `SELECT * FROM "` + strings.ReplaceAll(table, `"`, `""`) + `" LIMIT ? OFFSET ?`,
			Params: []any{int64(limit + 1), int64(offset)},
		})
	}
	out := sqlPage{Tables: []sqlTable{}, Offset: offset}
	run := func(stmts []opsqlite.Statement) ([]opsqlite.Result, error) {
		o, err := store.Exec(r.Context(), opsqlite.ExecInput{Fence: fence, Statements: stmts, ReadOnly: true})
		return o.Results, err
	}
	results, err := run(stmts[:1])
	if err != nil {
		fail(w, r, "reading an actor's SQLite", err)
		return
	}
	found := false
	for _, row := range results[0].Rows {
		name, _ := row[0].(string)
		def, _ := row[1].(string)
		out.Tables = append(out.Tables, sqlTable{Name: name, SQL: def})
		found = found || name == table
	}
	if table == "" {
		writeJSON(w, out)
		return
	}
	if !found {
		writeError(w, r, rerr.BadRequest("table", "no table of that name"))
		return
	}
	results, err = run(stmts[1:])
	if err != nil {
		fail(w, r, "reading an actor's SQLite", err)
		return
	}
	rows := results[0].Rows
	out.Table, out.Columns, out.Rows = table, results[0].Columns, [][]any{}
	total := 0
	for i, row := range rows {
		if i == limit || total > maxSQLBytes {
			next := offset + i
			out.Next = &next
			break
		}
		cells := make([]any, len(row))
		for j, v := range row {
			cells[j], total = cell(v, total)
		}
		out.Rows = append(out.Rows, cells)
	}
	writeJSON(w, out)
}

// cell is a row value as sent (see sqlPage), and total plus the bytes it adds.
func cell(v any, total int) (any, int) {
	switch x := v.(type) {
	case string:
		if len(x) > maxCellBytes {
			cut := x[:maxCellBytes]
			for !utf8.ValidString(cut) {
				cut = cut[:len(cut)-1]
			}
			return map[string]any{"text": cut, "cut": true}, total + len(cut)
		}
		return x, total + len(x)
	case []byte:
		b := x[:min(len(x), maxCellBytes)]
		return map[string]any{"base64": base64.StdEncoding.EncodeToString(b), "size": len(x), "cut": len(b) < len(x)}, total + len(b)
	}
	return v, total + 8
}
