package hostsock_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// Latency of SQLite page requests through the engine: a raw envoy on a real socket sends
// one request and waits for its answer. Run with
//
//	go test -run '^$' -bench Sqlite ./engine/envoyws/
//
// (never part of make test). The store is the embedded one, in memory or on disk.

type benchEnvoy struct {
	b   *testing.B
	c   *websocket.Conn
	aid id.ID
}

func newBenchEnvoy(b *testing.B, dbURL string) *benchEnvoy {
	ctx := context.Background()
	db, err := udb.Open(ctx, dbURL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	aid, key := id.New(label), "envoy-bench"
	err = udb.Update(ctx, db, func(tx udb.Transaction) error {
		ns, err := namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(label), NowMs: time.Now().UnixMilli()})
		if err != nil {
			return err
		}
		nsID := ns.Namespace.NamespaceID
		if _, err := runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: nsID, Name: pool}); err != nil {
			return err
		}
		keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: keys.ActorStateVersion, Namespace: nsID, Name: "bench",
			Phase: keys.PhaseRunning, NextGeneration: 1, EnvoyKey: &key})
		keys.Set(tx, keys.EnvoyActorKey{Namespace: nsID, EnvoyKey: key, ActorID: aid}, 0)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	node := hostsocktest.Start(b, db, hostsocktest.Config{Label: label})
	hs := httptest.NewServer(node.Server.Wrap(http.NotFoundHandler()))
	b.Cleanup(hs.Close)
	c, _, err := websocket.Dial(ctx, wsURL(hs, envoyQuery(key)), &websocket.DialOptions{Subprotocols: []string{"rivet"}})
	if err != nil {
		b.Fatal(err)
	}
	c.SetReadLimit(-1)
	b.Cleanup(func() { _ = c.CloseNow() })
	e := &benchEnvoy{b: b, c: c, aid: aid}
	md := "{}"
	e.send(proto.ToRivetMetadata{Metadata: &md})
	// The first request after registration answers once the socket is registered.
	for {
		e.send(proto.ToRivetSqliteGetPagesRequest{RequestID: 0, Data: proto.SqliteGetPagesRequest{ActorID: aid.String(), Pgnos: []uint32{1}}})
		if r, ok := e.recv().(proto.ToEnvoySqliteGetPagesResponse); ok {
			if _, ok := r.Data.(proto.SqliteGetPagesOk); ok {
				return e
			}
		}
		time.Sleep(time.Millisecond)
	}
}

func (e *benchEnvoy) send(m proto.ToRivet) {
	b, err := proto.EncodeToRivet(m, 8)
	if err != nil {
		e.b.Fatal(err)
	}
	if err := e.c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		e.b.Fatal(err)
	}
}

// recv returns the next message that is not a ping (pings are answered).
func (e *benchEnvoy) recv() proto.ToEnvoy {
	for {
		_, b, err := e.c.Read(context.Background())
		if err != nil {
			e.b.Fatal(err)
		}
		m, err := proto.DecodeToEnvoy(b, 8)
		if err != nil {
			e.b.Fatal(err)
		}
		if p, ok := m.(proto.ToEnvoyPing); ok {
			e.send(proto.ToRivetPong{Ts: p.Ts})
			continue
		}
		if _, ok := m.(proto.ToEnvoyInit); ok {
			continue
		}
		return m
	}
}

func benchStores(b *testing.B, f func(b *testing.B, e *benchEnvoy)) {
	b.Run("mem", func(b *testing.B) { f(b, newBenchEnvoy(b, "mem://")) })
	b.Run("file", func(b *testing.B) { f(b, newBenchEnvoy(b, "file://"+b.TempDir())) })
}

// BenchmarkSqliteCommit commits 4 dirty pages of 4 KiB (a small write transaction).
func BenchmarkSqliteCommit(b *testing.B) {
	benchStores(b, func(b *testing.B, e *benchEnvoy) {
		dirty := make([]proto.SqliteDirtyPage, 4)
		for i := range dirty {
			dirty[i] = proto.SqliteDirtyPage{Pgno: uint32(i + 1), Bytes: pageBytes(uint32(i), 4096)}
		}
		gen := uint64(0)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			e.send(proto.ToRivetSqliteCommitRequest{RequestID: uint32(i), Data: proto.SqliteCommitRequest{ActorID: e.aid.String(),
				DirtyPages: dirty, DbSizePages: 64, ExpectedGeneration: &gen}})
			r, ok := e.recv().(proto.ToEnvoySqliteCommitResponse)
			if !ok {
				b.Fatal("not a commit response")
			}
			if _, ok := r.Data.(proto.SqliteCommitOk); !ok {
				b.Fatalf("response %#v", r)
			}
		}
	})
}

// BenchmarkSqliteGetPages reads 4 consecutive pages of 4 KiB (a small query's cache miss).
func BenchmarkSqliteGetPages(b *testing.B) {
	benchStores(b, func(b *testing.B, e *benchEnvoy) {
		var dirty []proto.SqliteDirtyPage
		for p := uint32(1); p <= 64; p++ {
			dirty = append(dirty, proto.SqliteDirtyPage{Pgno: p, Bytes: pageBytes(p, 4096)})
		}
		e.send(proto.ToRivetSqliteCommitRequest{RequestID: 1, Data: proto.SqliteCommitRequest{ActorID: e.aid.String(), DirtyPages: dirty, DbSizePages: 64}})
		e.recv()
		gen := uint64(0)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			p := uint32(i%60) + 1
			e.send(proto.ToRivetSqliteGetPagesRequest{RequestID: uint32(i), Data: proto.SqliteGetPagesRequest{ActorID: e.aid.String(),
				Pgnos: []uint32{p, p + 1, p + 2, p + 3}, ExpectedGeneration: &gen}})
			r, ok := e.recv().(proto.ToEnvoySqliteGetPagesResponse)
			if !ok {
				b.Fatal("not a get pages response")
			}
			if ok, is := r.Data.(proto.SqliteGetPagesOk); !is || len(ok.Pages) != 4 || ok.Pages[3].Bytes == nil {
				b.Fatalf("response %#v", r)
			}
		}
	})
}
