package hostsock_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// hostActor records actor aid as running on envoy key at generation gen, as a placement
// does (its lifecycle record and the envoy's actor entry).
func hostActor(t *testing.T, e *envoyEnv, aid id.ID, key string, gen uint32) {
	t.Helper()
	err := udb.Update(context.Background(), e.db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: keys.ActorStateVersion, Namespace: e.ns, Name: "sql",
			Phase: keys.PhaseRunning, Generation: gen, NextGeneration: gen + 1, EnvoyKey: &key})
		keys.Set(tx, keys.EnvoyActorKey{Namespace: e.ns, EnvoyKey: key, ActorID: aid}, gen)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func u64(v uint64) *uint64 { return &v }

func pageBytes(pgno uint32, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int(pgno) + i*7)
	}
	return b
}

func wantSqliteErr(t *testing.T, data any, group, code string) {
	t.Helper()
	er, ok := data.(proto.SqliteErrorResponse)
	if !ok || er.Group != group || er.Code != code || er.Message == "" {
		t.Fatalf("response %#v, want %s.%s", data, group, code)
	}
}

// A raw envoy commits pages, reads them back, stages a commit in segments and finalizes
// it, over the v8 codec; a request for another generation or an actor of another envoy is
// refused under its request id, and the socket stays open.
func TestSqlitePages(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	aid := id.New(label)
	hostActor(t, e, aid, "envoy-1", 2)

	s.send(proto.ToRivetSqliteCommitRequest{RequestID: 1, Data: proto.SqliteCommitRequest{ActorID: aid.String(),
		DirtyPages:  []proto.SqliteDirtyPage{{Pgno: 1, Bytes: pageBytes(1, 4096)}, {Pgno: 3, Bytes: pageBytes(3, 4096)}},
		DbSizePages: 3, NowMs: 5, ExpectedGeneration: u64(2), ExpectedHeadTxid: u64(0)}})
	c := nextEnvoy[proto.ToEnvoySqliteCommitResponse](s)
	if ok, is := c.Data.(proto.SqliteCommitOk); !is || c.RequestID != 1 || ok.HeadTxid == nil || *ok.HeadTxid != 1 {
		t.Fatalf("commit %#v", c)
	}
	// No expected generation: the one the actor has on this envoy.
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 2, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{1, 2, 3, 4}}})
	g := nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s)
	ok, is := g.Data.(proto.SqliteGetPagesOk)
	if !is || g.RequestID != 2 || len(ok.Pages) != 4 || *ok.HeadTxid != 1 ||
		!bytes.Equal(ok.Pages[0].Bytes, pageBytes(1, 4096)) || ok.Pages[1].Bytes != nil || !bytes.Equal(ok.Pages[2].Bytes, pageBytes(3, 4096)) || ok.Pages[3].Bytes != nil {
		t.Fatalf("get pages %#v", g)
	}

	// A staged commit of two segments.
	s.send(proto.ToRivetSqliteCommitStageBeginRequest{RequestID: 3, Data: proto.SqliteCommitStageBeginRequest{ActorID: aid.String(), ExpectedGeneration: u64(2), ExpectedHeadTxid: u64(1)}})
	b := nextEnvoy[proto.ToEnvoySqliteCommitStageBeginResponse](s)
	if ok, is := b.Data.(proto.SqliteCommitStageBeginOk); !is || ok.Txid != 2 {
		t.Fatalf("stage begin %#v", b)
	}
	for i, first := range []uint32{1, 65} {
		var dirty []proto.SqliteDirtyPage
		for p := first; p < first+64; p++ {
			dirty = append(dirty, proto.SqliteDirtyPage{Pgno: p, Bytes: pageBytes(p+100, 4096)})
		}
		s.send(proto.ToRivetSqliteCommitStageSegmentRequest{RequestID: uint32(4 + i), Data: proto.SqliteCommitStageSegmentRequest{
			ActorID: aid.String(), ExpectedGeneration: u64(2), Txid: 2, FirstPgno: first, DirtyPages: dirty}})
		r := nextEnvoy[proto.ToEnvoySqliteCommitStageSegmentResponse](s)
		if ok, is := r.Data.(proto.SqliteCommitStageSegmentOk); !is || r.RequestID != uint32(4+i) || ok.StagedBytes != uint64(i+1)*64*4096 {
			t.Fatalf("segment %d: %#v", i, r)
		}
	}
	s.send(proto.ToRivetSqliteCommitFinalizeRequest{RequestID: 6, Data: proto.SqliteCommitFinalizeRequest{ActorID: aid.String(),
		ExpectedGeneration: u64(2), Txid: 2, NewDbSizePages: 128, NowMs: 6, SegmentFirstPgnos: []uint32{1, 65}}})
	f := nextEnvoy[proto.ToEnvoySqliteCommitFinalizeResponse](s)
	if ok, is := f.Data.(proto.SqliteCommitFinalizeOk); !is || ok.HeadTxid == nil || *ok.HeadTxid != 2 {
		t.Fatalf("finalize %#v", f)
	}
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 7, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{128, 3}, ExpectedGeneration: u64(2), ExpectedHeadTxid: u64(2)}})
	g = nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s)
	if ok, is := g.Data.(proto.SqliteGetPagesOk); !is || !bytes.Equal(ok.Pages[0].Bytes, pageBytes(228, 4096)) || !bytes.Equal(ok.Pages[1].Bytes, pageBytes(103, 4096)) {
		t.Fatalf("pages after finalize %#v", g)
	}

	// Fencing: a stale generation, a stale head, an actor of another envoy, a bad id.
	s.send(proto.ToRivetSqliteCommitRequest{RequestID: 8, Data: proto.SqliteCommitRequest{ActorID: aid.String(), DbSizePages: 1, ExpectedGeneration: u64(1)}})
	c = nextEnvoy[proto.ToEnvoySqliteCommitResponse](s)
	wantSqliteErr(t, c.Data, "sqlite", "fenced")
	s.send(proto.ToRivetSqliteCommitRequest{RequestID: 9, Data: proto.SqliteCommitRequest{ActorID: aid.String(), DbSizePages: 1, ExpectedHeadTxid: u64(1)}})
	c = nextEnvoy[proto.ToEnvoySqliteCommitResponse](s)
	wantSqliteErr(t, c.Data, "sqlite", "head_mismatch")
	other := id.New(label)
	hostActor(t, e, other, "envoy-2", 0)
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 10, Data: proto.SqliteGetPagesRequest{ActorID: other.String(), Pgnos: []uint32{1}, ExpectedGeneration: u64(0)}})
	g = nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s)
	wantSqliteErr(t, g.Data, "sqlite", "fenced")
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 11, Data: proto.SqliteGetPagesRequest{ActorID: other.String(), Pgnos: []uint32{1}}})
	g = nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s)
	wantSqliteErr(t, g.Data, "sqlite", "fenced")
	s.send(proto.ToRivetSqliteCommitStageBeginRequest{RequestID: 12, Data: proto.SqliteCommitStageBeginRequest{ActorID: "not-an-id"}})
	b = nextEnvoy[proto.ToEnvoySqliteCommitStageBeginResponse](s)
	wantSqliteErr(t, b.Data, "sqlite", "invalid_request")
	if b.RequestID != 12 {
		t.Fatalf("request id %d", b.RequestID)
	}

	// The actor moves to envoy-2 at generation 3: envoy-1 can no longer write, and the
	// new host reads what envoy-1 committed.
	hostActor(t, e, aid, "envoy-2", 3)
	s.send(proto.ToRivetSqliteCommitRequest{RequestID: 13, Data: proto.SqliteCommitRequest{ActorID: aid.String(), DbSizePages: 1, ExpectedGeneration: u64(2)}})
	c = nextEnvoy[proto.ToEnvoySqliteCommitResponse](s)
	wantSqliteErr(t, c.Data, "sqlite", "fenced")
	s2, _ := connectEnvoy(t, e, e.hs, "envoy-2")
	s2.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 1, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{1}, ExpectedGeneration: u64(3)}})
	g = nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s2)
	if ok, is := g.Data.(proto.SqliteGetPagesOk); !is || !bytes.Equal(ok.Pages[0].Bytes, pageBytes(101, 4096)) {
		t.Fatalf("new host's read %#v", g)
	}
}

// A socket that a newer one of its envoy replaced (on another node, so it is still open
// here) is evicted by its next SQLite request instead of answered.
func TestSqliteStaleSocketEvicted(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	aid := id.New(label)
	hostActor(t, e, aid, "envoy-1", 0)
	_, hs2 := serveEnvoys(t, e.db, hostsocktest.Config{})
	connectEnvoy(t, e, hs2, "envoy-1")
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 1, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{1}}})
	s.closed(websocket.StatusNormalClosure, "ws.eviction")
}

// Remote SQL: the actor's envoy runs statements that write its database, with typed
// parameters and columns; another envoy's SQL for it is read-only while it runs.
func TestSqliteStatements(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	s2, _ := connectEnvoy(t, e, e.hs, "envoy-2")
	aid := id.New(label)
	hostActor(t, e, aid, "envoy-1", 1)
	ns := e.ns.String()

	s.send(proto.ToRivetSqliteExecRequest{RequestID: 1, Data: proto.SqliteExecRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1,
		SQL: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, data BLOB)"}})
	x := nextEnvoy[proto.ToEnvoySqliteExecResponse](s)
	if _, ok := x.Data.(proto.SqliteExecOk); !ok || x.RequestID != 1 {
		t.Fatalf("exec %#v", x)
	}
	s.send(proto.ToRivetSqliteExecuteBatchRequest{RequestID: 2, Data: proto.SqliteExecuteBatchRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1,
		Statements: []proto.SqliteBatchStatement{
			{SQL: "INSERT INTO t (name, score, data) VALUES (?, ?, ?)", Params: []proto.SqliteValue{proto.SqliteValueText{Value: "a"}, proto.SqliteFloat(0.5), proto.SqliteValueBlob{Value: []byte{1, 2}}}},
			{SQL: "INSERT INTO t (name, score, data) VALUES (?, ?, ?)", Params: []proto.SqliteValue{proto.SqliteValueText{Value: "b"}, proto.SqliteValueNull{}, proto.SqliteValueNull{}}},
		}}})
	bt := nextEnvoy[proto.ToEnvoySqliteExecuteBatchResponse](s)
	bok, ok := bt.Data.(proto.SqliteExecuteBatchOk)
	if !ok || len(bok.Results) != 2 || bok.Results[1].Changes != 1 || bok.Results[1].LastInsertRowID == nil || *bok.Results[1].LastInsertRowID != 2 {
		t.Fatalf("batch %#v", bt)
	}
	s.send(proto.ToRivetSqliteExecuteRequest{RequestID: 3, Data: proto.SqliteExecuteRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1,
		SQL: "SELECT id, name, score, data FROM t WHERE id = ?", Params: []proto.SqliteValue{proto.SqliteValueInteger{Value: 1}}}})
	r := nextEnvoy[proto.ToEnvoySqliteExecuteResponse](s)
	rok, ok := r.Data.(proto.SqliteExecuteOk)
	if !ok || len(rok.Result.Rows) != 1 || len(rok.Result.Columns) != 4 {
		t.Fatalf("select %#v", r)
	}
	row := rok.Result.Rows[0]
	if row[0] != (proto.SqliteValueInteger{Value: 1}) || row[1] != (proto.SqliteValueText{Value: "a"}) || row[2].(proto.SqliteValueFloat).Float64() != 0.5 ||
		!bytes.Equal(row[3].(proto.SqliteValueBlob).Value, []byte{1, 2}) {
		t.Fatalf("row %#v", row)
	}

	// envoy-2 does not host the actor: it reads, and may not write.
	s2.send(proto.ToRivetSqliteExecRequest{RequestID: 4, Data: proto.SqliteExecRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1, SQL: "SELECT count(*) FROM t"}})
	x = nextEnvoy[proto.ToEnvoySqliteExecResponse](s2)
	if xok, ok := x.Data.(proto.SqliteExecOk); !ok || xok.Result.Rows[0][0] != (proto.SqliteValueInteger{Value: 2}) {
		t.Fatalf("read from another envoy %#v", x)
	}
	s2.send(proto.ToRivetSqliteExecRequest{RequestID: 5, Data: proto.SqliteExecRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1, SQL: "DELETE FROM t"}})
	x = nextEnvoy[proto.ToEnvoySqliteExecResponse](s2)
	wantSqliteErr(t, x.Data, "sqlite", "read_only")
	// A bad statement, a stale generation.
	s.send(proto.ToRivetSqliteExecRequest{RequestID: 6, Data: proto.SqliteExecRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 1, SQL: "SELEC 1"}})
	x = nextEnvoy[proto.ToEnvoySqliteExecResponse](s)
	wantSqliteErr(t, x.Data, "sqlite", "statement_failed")
	s.send(proto.ToRivetSqliteExecRequest{RequestID: 7, Data: proto.SqliteExecRequest{NamespaceID: ns, ActorID: aid.String(), Generation: 0, SQL: "SELECT 1"}})
	x = nextEnvoy[proto.ToEnvoySqliteExecResponse](s)
	wantSqliteErr(t, x.Data, "sqlite", "fenced")
	// The pages the statements wrote are the ones the host's VFS reads.
	s.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 8, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{1}}})
	g := nextEnvoy[proto.ToEnvoySqliteGetPagesResponse](s)
	if gok, ok := g.Data.(proto.SqliteGetPagesOk); !ok || !bytes.HasPrefix(gok.Pages[0].Bytes, []byte("SQLite format 3\x00")) || *gok.HeadTxid != 2 {
		t.Fatalf("page 1 %#v", g)
	}
}

// The start command of an actor whose KV is small carries all of it (preloadedKv): empty
// at the first start, then, after the actor slept and its KV was written, the wake's start
// carries the entries.
func TestStartCarriesPreloadedKv(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	acts := e.node.Lifecycle.Actors
	a, err := acts.Create(context.Background(), actor.CreateInput{
		Namespace: e.ns, NamespaceName: "default", Name: "counter", Selector: pool, CrashPolicy: actor.CrashSleep,
	})
	if err != nil {
		t.Fatal(err)
	}
	startCmd := func() (proto.ActorCheckpoint, *proto.PreloadedKv) {
		t.Helper()
		cmds := nextSkippingAcks[proto.ToEnvoyCommands](t, s)
		st, ok := cmds[0].Inner.(proto.CommandStartActor)
		if len(cmds) != 1 || !ok || cmds[0].Checkpoint.ActorID != a.ActorID.String() {
			t.Fatalf("commands %+v", cmds)
		}
		return cmds[0].Checkpoint, st.PreloadedKv
	}
	cp, pk := startCmd()
	if pk == nil || len(pk.Entries) != 0 || len(pk.RequestedPrefixes) != 1 || len(pk.RequestedPrefixes[0]) != 0 {
		t.Fatalf("first start's preloaded kv %+v", pk)
	}
	ev := func(i int64, inner proto.Event) {
		s.send(proto.ToRivetEvents{{Checkpoint: proto.ActorCheckpoint{ActorID: cp.ActorID, Generation: cp.Generation, Index: i}, Inner: inner}})
	}
	ev(0, proto.EventActorStateUpdate{State: proto.ActorStateRunning{}})
	nextEnvoy[proto.ToEnvoyAckEvents](s)
	err = udb.Update(context.Background(), e.db, func(tx udb.Transaction) error {
		return actorkv.Put(context.Background(), tx, actorkv.PutInput{ActorID: a.ActorID, Keys: [][]byte{[]byte("k1"), []byte("k2")},
			Values: [][]byte{[]byte("v1"), []byte("v2")}, Version: []byte("test"), NowMs: 7})
	})
	if err != nil {
		t.Fatal(err)
	}
	ev(1, proto.EventActorIntent{Intent: proto.ActorIntentSleep{}})
	if stop := nextSkippingAcks[proto.ToEnvoyCommands](t, s); len(stop) != 1 {
		t.Fatalf("stop %+v", stop)
	}
	ev(2, proto.EventActorStateUpdate{State: proto.ActorStateStopped{Code: proto.StopCodeOK}})
	eventually(t, "sleeping", func() bool {
		res, err := udb.ReadTransact(context.Background(), e.db, func(r udb.ReadTransaction) (keys.ActorPhase, error) {
			st, _, err := keys.Get(context.Background(), r, keys.ActorStateKey{ActorID: a.ActorID})
			return st.Phase, err
		})
		return err == nil && res == keys.PhaseSleeping
	})
	if err := acts.Wake(context.Background(), a.ActorID); err != nil {
		t.Fatal(err)
	}
	_, pk = startCmd()
	if pk == nil || len(pk.Entries) != 2 || string(pk.Entries[1].Key) != "k2" || string(pk.Entries[1].Value) != "v2" ||
		pk.Entries[0].Metadata.UpdateTs != 7 || string(pk.Entries[0].Metadata.Version) != "test" {
		t.Fatalf("wake's preloaded kv %+v", pk)
	}
}

// nextSkippingAcks reads messages, skipping pings and event acknowledgements, until one of
// type T.
func nextSkippingAcks[T proto.ToEnvoy](t *testing.T, s *sock) T {
	t.Helper()
	for {
		m, err := s.recv()
		if err != nil {
			t.Fatalf("waiting for %T: %v", *new(T), err)
		}
		switch v := m.(type) {
		case T:
			return v
		case proto.ToEnvoyPing, proto.ToEnvoyAckEvents:
		default:
			t.Fatalf("got %#v, waiting for %T", m, *new(T))
		}
	}
}
