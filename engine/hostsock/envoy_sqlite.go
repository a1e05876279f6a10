package hostsock

import (
	"context"
	"errors"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	opsqlite "github.com/berthhq/berth/ops/sqlite"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// SQLite requests (ToRivet tags 7–14): the actor SQLite page store (ops/sqlite). Each is
// answered under its request id, with the request's …Ok value or a SqliteErrorResponse
// carrying the error's group, code and message; the socket stays open. A page request is
// fenced three ways, in its own transaction: this socket is still its envoy's current one
// (else the socket is evicted, as for KV), the actor is placed on this envoy, and at the
// generation the request expects (when it names none, the generation the actor has here).
// SQL statements (Exec, Execute, ExecuteBatch: rivetkit's remote SQLite) run against the
// stored pages (ops/sqlite.Store.Exec): the actor's own envoy may write, another envoy's
// SQL runs read-only while the actor is placed, anyone may write while it is on no host.
// Requests are served in order on the read loop, so the segments of a staged commit and a
// remote session's statements apply in the order sent; a long one delays the socket's
// other messages (bounded by sqliteTimeout).

// sqliteTimeout bounds one SQLite request, retries and a staged commit's apply included.
const sqliteTimeout = 30 * time.Second

// sqliteRequest answers SQLite request m; false if m is not one.
func (p *envoyProtocol) sqliteRequest(c *conn, m proto.ToRivet) bool {
	ctx, cancel := context.WithTimeout(c.s.ctx, sqliteTimeout)
	defer cancel()
	st := &opsqlite.Store{DB: c.s.o.DB}
	evict := false
	sqliteError := func(err error, actorID string) proto.SqliteErrorResponse {
		if rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
			evict = true
		}
		return p.sqliteError(c, err, actorID)
	}
	var out proto.ToEnvoy
	switch m := m.(type) {
	case proto.ToRivetSqliteGetPagesRequest:
		d := m.Data
		var data proto.SqliteGetPagesResponse
		f, err := p.sqliteFence(c, ctx, d.ActorID, d.ExpectedGeneration)
		if err == nil {
			var res opsqlite.GetPagesOutput
			if res, err = st.GetPages(ctx, opsqlite.GetPagesInput{Fence: f, Pgnos: d.Pgnos, ExpectedHead: d.ExpectedHeadTxid}); err == nil {
				ok := proto.SqliteGetPagesOk{Pages: make([]proto.SqliteFetchedPage, len(res.Pages)), HeadTxid: &res.HeadTxid}
				for i, p := range res.Pages {
					ok.Pages[i] = proto.SqliteFetchedPage{Pgno: p.Pgno, Bytes: p.Bytes}
				}
				data = ok
			}
		}
		if err != nil {
			data = sqliteError(err, d.ActorID)
		}
		out = proto.ToEnvoySqliteGetPagesResponse{RequestID: m.RequestID, Data: data}
	case proto.ToRivetSqliteCommitRequest:
		d := m.Data
		var data proto.SqliteCommitResponse
		f, err := p.sqliteFence(c, ctx, d.ActorID, d.ExpectedGeneration)
		if err == nil {
			var res opsqlite.CommitOutput
			res, err = st.Commit(ctx, opsqlite.CommitInput{Fence: f, Pages: dirtyPages(d.DirtyPages), DbSizePages: d.DbSizePages,
				NowMs: d.NowMs, ExpectedHead: d.ExpectedHeadTxid})
			data = proto.SqliteCommitOk{HeadTxid: &res.HeadTxid}
		}
		if err != nil {
			data = sqliteError(err, d.ActorID)
		}
		out = proto.ToEnvoySqliteCommitResponse{RequestID: m.RequestID, Data: data}
	case proto.ToRivetSqliteCommitStageBeginRequest:
		d := m.Data
		var data proto.SqliteCommitStageBeginResponse
		f, err := p.sqliteFence(c, ctx, d.ActorID, d.ExpectedGeneration)
		if err == nil {
			var res opsqlite.StageBeginOutput
			res, err = st.StageBegin(ctx, f, d.ExpectedHeadTxid)
			data = proto.SqliteCommitStageBeginOk{Txid: res.Txid}
		}
		if err != nil {
			data = sqliteError(err, d.ActorID)
		}
		out = proto.ToEnvoySqliteCommitStageBeginResponse{RequestID: m.RequestID, Data: data}
	case proto.ToRivetSqliteCommitStageSegmentRequest:
		d := m.Data
		var data proto.SqliteCommitStageSegmentResponse
		f, err := p.sqliteFence(c, ctx, d.ActorID, d.ExpectedGeneration)
		if err == nil {
			var res opsqlite.StageSegmentOutput
			res, err = st.StageSegment(ctx, opsqlite.StageSegmentInput{Fence: f, Txid: d.Txid, FirstPgno: d.FirstPgno, Pages: dirtyPages(d.DirtyPages)})
			data = proto.SqliteCommitStageSegmentOk{StagedBytes: res.StagedBytes}
		}
		if err != nil {
			data = sqliteError(err, d.ActorID)
		}
		out = proto.ToEnvoySqliteCommitStageSegmentResponse{RequestID: m.RequestID, Data: data}
	case proto.ToRivetSqliteCommitFinalizeRequest:
		d := m.Data
		var data proto.SqliteCommitFinalizeResponse
		f, err := p.sqliteFence(c, ctx, d.ActorID, d.ExpectedGeneration)
		if err == nil {
			var res opsqlite.StageFinalizeOutput
			res, err = st.StageFinalize(ctx, opsqlite.StageFinalizeInput{Fence: f, Txid: d.Txid, NewDbSizePages: d.NewDbSizePages,
				NowMs: d.NowMs, SegmentFirstPgnos: d.SegmentFirstPgnos})
			data = proto.SqliteCommitFinalizeOk{HeadTxid: &res.HeadTxid}
		}
		if err != nil {
			data = sqliteError(err, d.ActorID)
		}
		out = proto.ToEnvoySqliteCommitFinalizeResponse{RequestID: m.RequestID, Data: data}
	default:
		r, ok := p.sqliteStatement(c, ctx, m, sqliteError)
		if !ok {
			return false
		}
		out = r
	}
	if evict {
		c.closeWith(evicted, true)
		return true
	}
	if err := p.write(c, out); err != nil {
		c.fail(nil)
	}
	return true
}

func dirtyPages(ps []proto.SqliteDirtyPage) []opsqlite.Page {
	out := make([]opsqlite.Page, len(ps))
	for i, p := range ps {
		out[i] = opsqlite.Page{Pgno: p.Pgno, Bytes: p.Bytes}
	}
	return out
}

// errNotHosted is a page request for an actor this envoy does not hold.
func errNotHosted(aid, why string) error {
	return rerr.SQLiteFenced(aid, "any", why)
}

// sqliteFence builds the fence of a page request. Without an expected generation it reads
// the generation the actor has on this envoy (snapshot: the fence reads it again,
// serializably, with the request).
func (p *envoyProtocol) sqliteFence(c *conn, ctx context.Context, actorID string, expected *uint64) (opsqlite.Fence, error) {
	aid, err := id.Parse(actorID)
	if err != nil {
		return opsqlite.Fence{}, rerr.SQLiteInvalidRequest("actor id: " + err.Error())
	}
	f := opsqlite.Fence{ActorID: aid, Host: func(ctx context.Context, r udb.ReadTransaction, st keys.ActorState) error {
		return sqliteHosted(ctx, r, c, actorID, st)
	}}
	if expected != nil {
		g, ok := opsqlite.GenerationFromWire(*expected)
		if !ok {
			return f, errNotHosted(actorID, "the expected generation is not a u32")
		}
		f.Generation = g
		return f, nil
	}
	res, err := udb.ReadTransact(ctx, c.s.o.DB, func(r udb.ReadTransaction) (uint32, error) {
		g, placed, err := keys.Get(ctx, r.Snapshot(), keys.EnvoyActorKey{Namespace: c.host.Namespace, EnvoyKey: c.host.EnvoyKey, ActorID: aid})
		if err != nil || placed {
			return g, err
		}
		// An actor its serverless pool's endpoint was asked to start is not on the envoy
		// until its first event; its SQLite comes first.
		st, found, err := keys.Get(ctx, r.Snapshot(), keys.ActorStateKey{ActorID: aid})
		if err != nil {
			return 0, err
		}
		if found {
			if ok, err := actor.WaitsForPool(ctx, r.Snapshot(), st, c.host); err != nil || ok {
				return st.Generation, err
			}
		}
		return 0, errNotHosted(actorID, "the actor is not placed on envoy "+c.host.EnvoyKey)
	})
	if err != nil {
		return f, err
	}
	f.Generation = res
	return f, nil
}

// sqliteHosted is the socket's part of the fence: the socket is its envoy's current one and
// the actor's record places it on this envoy.
func sqliteHosted(ctx context.Context, r udb.ReadTransaction, c *conn, actorID string, st keys.ActorState) error {
	cur, _, err := keys.Get(ctx, r, keys.EnvoyConnIDKey{Namespace: c.host.Namespace, EnvoyKey: c.host.EnvoyKey})
	if err != nil {
		return err
	}
	if cur != c.connID {
		return rerr.EnvoyStaleConnection(c.host.EnvoyKey)
	}
	if st.EnvoyKey != nil && *st.EnvoyKey == c.host.EnvoyKey && st.Namespace == c.host.Namespace {
		return nil
	}
	if ok, err := actor.WaitsForPool(ctx, r, st, c.host); err != nil || ok {
		return err
	}
	return errNotHosted(actorID, "the actor is not placed on envoy "+c.host.EnvoyKey)
}

// sqliteError maps err to a SqliteErrorResponse: rerr errors by group, code and public
// message; anything else is logged and internal.
func (p *envoyProtocol) sqliteError(c *conn, err error, actorID string) proto.SqliteErrorResponse {
	pub := rerr.Public(err)
	if rerr.Is(pub, rerr.CodeCoreInternalError) && c.s.ctx.Err() == nil && !errors.Is(err, context.Canceled) {
		c.s.o.Log.Error("envoy socket: sqlite request", c.logAttrs("actor_id", actorID, "error", err)...)
	}
	return proto.SqliteErrorResponse{Group: pub.Group, Code: pub.Code, Message: pub.Message}
}

// sqliteStatement answers SqliteExec, SqliteExecute and SqliteExecuteBatch (ops/sqlite.Store.
// Exec); false if m is none of them. The actor's own envoy may write; for an actor placed on
// another envoy the SQL runs read-only; for one on no host, anyone may write.
func (p *envoyProtocol) sqliteStatement(c *conn, ctx context.Context, m proto.ToRivet, sqliteError func(error, string) proto.SqliteErrorResponse) (proto.ToEnvoy, bool) {
	var (
		nsID, actorID string
		gen           uint64
		in            opsqlite.ExecInput
	)
	switch m := m.(type) {
	case proto.ToRivetSqliteExecRequest:
		nsID, actorID, gen = m.Data.NamespaceID, m.Data.ActorID, m.Data.Generation
		in.Script = m.Data.SQL
		if in.Script == "" {
			in.Statements = []opsqlite.Statement{{SQL: ""}}
		}
	case proto.ToRivetSqliteExecuteRequest:
		nsID, actorID, gen = m.Data.NamespaceID, m.Data.ActorID, m.Data.Generation
		in.Statements = []opsqlite.Statement{{SQL: m.Data.SQL, Params: bindParams(m.Data.Params)}}
	case proto.ToRivetSqliteExecuteBatchRequest:
		nsID, actorID, gen = m.Data.NamespaceID, m.Data.ActorID, m.Data.Generation
		for _, st := range m.Data.Statements {
			in.Statements = append(in.Statements, opsqlite.Statement{SQL: st.SQL, Params: bindParams(st.Params)})
		}
	default:
		return nil, false
	}
	var out opsqlite.ExecOutput
	f, err := p.sqliteFence(c, ctx, actorID, &gen)
	if err == nil && nsID != c.host.Namespace.String() {
		err = rerr.SQLiteInvalidRequest("namespace " + nsID + " is not this envoy's")
	}
	if err == nil && len(in.Statements) == 0 && in.Script == "" {
		err = rerr.SQLiteInvalidRequest("no statement")
	}
	if err == nil {
		in.Fence, in.NowMs = f, time.Now().UnixMilli()
		out, err = (&opsqlite.Store{DB: c.s.o.DB}).Exec(ctx, in)
	}
	switch m := m.(type) {
	case proto.ToRivetSqliteExecRequest:
		var data proto.SqliteExecResponse
		if err != nil {
			data = sqliteError(err, actorID)
		} else {
			r := execResult(out.Results[0])
			data = proto.SqliteExecOk{Result: proto.SqliteQueryResult{Columns: r.Columns, Rows: r.Rows}}
		}
		return proto.ToEnvoySqliteExecResponse{RequestID: m.RequestID, Data: data}, true
	case proto.ToRivetSqliteExecuteRequest:
		var data proto.SqliteExecuteResponse
		if err != nil {
			data = sqliteError(err, actorID)
		} else {
			data = proto.SqliteExecuteOk{Result: execResult(out.Results[0])}
		}
		return proto.ToEnvoySqliteExecuteResponse{RequestID: m.RequestID, Data: data}, true
	case proto.ToRivetSqliteExecuteBatchRequest:
		var data proto.SqliteExecuteBatchResponse
		if err != nil {
			data = sqliteError(err, actorID)
		} else {
			ok := proto.SqliteExecuteBatchOk{Results: make([]proto.SqliteExecuteResult, len(out.Results))}
			for i, r := range out.Results {
				ok.Results[i] = execResult(r)
			}
			data = ok
		}
		return proto.ToEnvoySqliteExecuteBatchResponse{RequestID: m.RequestID, Data: data}, true
	}
	return nil, false
}

// bindParams converts bound parameters; nil stays nil (none).
func bindParams(ps []proto.SqliteValue) []any {
	if ps == nil {
		return nil
	}
	out := make([]any, len(ps))
	for i, p := range ps {
		switch p := p.(type) {
		case proto.SqliteValueInteger:
			out[i] = p.Value
		case proto.SqliteValueFloat:
			out[i] = p.Float64()
		case proto.SqliteValueText:
			out[i] = p.Value
		case proto.SqliteValueBlob:
			out[i] = p.Value
		default:
			out[i] = nil
		}
	}
	return out
}

// execResult converts a statement's result to the wire's typed columns.
func execResult(r opsqlite.Result) proto.SqliteExecuteResult {
	out := proto.SqliteExecuteResult{Columns: r.Columns, Rows: make([][]proto.SqliteValue, len(r.Rows)), Changes: r.Changes, LastInsertRowID: r.LastInsertRowID}
	if out.Columns == nil {
		out.Columns = []string{}
	}
	for i, row := range r.Rows {
		vals := make([]proto.SqliteValue, len(row))
		for j, v := range row {
			switch v := v.(type) {
			case int64:
				vals[j] = proto.SqliteValueInteger{Value: v}
			case float64:
				vals[j] = proto.SqliteFloat(v)
			case string:
				vals[j] = proto.SqliteValueText{Value: v}
			case []byte:
				vals[j] = proto.SqliteValueBlob{Value: v}
			default:
				vals[j] = proto.SqliteValueNull{}
			}
		}
		out.Rows[i] = vals
	}
	return out
}
