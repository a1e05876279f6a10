package hostsock_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// connID reads the runner's current connection id (zero when it has no socket).
func connID(t *testing.T, e *env, rid string) id.ID {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (id.ID, error) {
		v, _, err := keys.Get(context.Background(), tx, keys.RunnerConnIDKey{RunnerID: id.MustParse(rid)})
		return v, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// eventually polls cond every 10 ms for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestEviction(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	a, ciA := connect(t, e, "pool", "same")
	connA := connID(t, e, ciA.RunnerID)
	b, ciB := connect(t, e, "pool", "same")
	if ciB.RunnerID != ciA.RunnerID {
		t.Fatalf("runner id changed: %s then %s", ciA.RunnerID, ciB.RunnerID)
	}
	waitClose(t, a, websocket.StatusNormalClosure, "ws.eviction")
	// The evicted socket does not disconnect the runner: B's connection stays current.
	connB := connID(t, e, ciB.RunnerID)
	if connB.IsZero() || connB == connA {
		t.Fatalf("connection id after eviction %v (was %v)", connB, connA)
	}
	time.Sleep(50 * time.Millisecond) // give a wrong disconnect of A the time to happen
	if got := connID(t, e, ciB.RunnerID); got != connB {
		t.Fatalf("connection id %v after eviction settled, want %v", got, connB)
	}
	// B is still open.
	send(t, b, proto.ToServerPong{Ts: time.Now().UnixMilli()})
}

func TestPingPong(t *testing.T) {
	e := start(t, hostsocktest.Config{Runner: hostsock.Timing{PingInterval: 20 * time.Millisecond, PingTimeout: 400 * time.Millisecond}})
	c, ci := connect(t, e, "pool", "k")
	before := getRunner(t, e, ci.RunnerID).LastPingTs
	for range 3 {
		m, err := recv(t, c)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := m.(proto.ToClientPing)
		if !ok {
			t.Fatalf("got %T, want ToClientPing", m)
		}
		send(t, c, proto.ToServerPong{Ts: p.Ts})
	}
	eventually(t, "the pong recorded", func() bool { return getRunner(t, e, ci.RunnerID).LastPingTs > before })
	// No more pongs: the server closes with ws.timed_out.
	waitClose(t, c, websocket.StatusInternalError, "ws.timed_out")
}

// A batch of pongs that conflicts is recorded pong by pong. Here every commit that records
// the pings of two runners or more conflicts, as a batch does under steady creates (each
// slot taken on one of its runners meanwhile conflicts with it): retried whole, the batch
// never commits.
func TestConflictingPongBatchRecordedPongByPong(t *testing.T) {
	db := &batchConflicts{Database: mustOpen(t), pings: map[string]bool{}}
	e := startOn(t, db, hostsocktest.Config{Runner: hostsock.Timing{PingInterval: 200 * time.Millisecond, PingTimeout: 10 * time.Second}})
	type host struct {
		c      *websocket.Conn
		rid    string
		before int64
		ping   proto.ToClientPing
	}
	var hosts []*host
	for _, key := range []string{"a", "b", "c"} {
		c, ci := connect(t, e, "pool", key)
		db.watch(ci.RunnerID)
		hosts = append(hosts, &host{c: c, rid: ci.RunnerID, before: getRunner(t, e, ci.RunnerID).LastPingTs})
	}
	for _, h := range hosts {
		for {
			m, err := recv(t, h.c)
			if err != nil {
				t.Fatal(err)
			}
			if p, ok := m.(proto.ToClientPing); ok {
				h.ping = p
				break
			}
		}
	}
	for _, h := range hosts { // together: the worker records the first alone, the others in a batch
		send(t, h.c, proto.ToServerPong{Ts: h.ping.Ts})
	}
	for _, h := range hosts {
		eventually(t, "runner "+h.rid+"'s pong recorded", func() bool { return getRunner(t, e, h.rid).LastPingTs > h.before })
	}
	if db.refused.Load() == 0 {
		t.Fatal("no batch of pongs was refused: the test did not batch them")
	}
}

// batchConflicts fails with not_committed every commit that sets the last ping of two or
// more of the watched runners.
type batchConflicts struct {
	udb.Database
	mu      sync.Mutex
	pings   map[string]bool // the watched runners' RunnerLastPingTsKey
	refused atomic.Int64
}

func (d *batchConflicts) watch(rid string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pings[string(keys.RunnerLastPingTsKey{RunnerID: id.MustParse(rid)}.Pack())] = true
}

func (d *batchConflicts) CreateTransaction() (udb.Transaction, error) {
	tx, err := d.Database.CreateTransaction()
	return &pingCountingTx{Transaction: tx, d: d}, err
}

func (d *batchConflicts) Transact(ctx context.Context, f func(udb.Transaction) (any, error)) (any, error) {
	return udb.RunTransact(ctx, d, f)
}

func (d *batchConflicts) ReadTransact(ctx context.Context, f func(udb.ReadTransaction) (any, error)) (any, error) {
	return udb.RunReadTransact(ctx, d, f)
}

type pingCountingTx struct {
	udb.Transaction
	d     *batchConflicts
	pings int
}

func (t *pingCountingTx) Set(key, value []byte) {
	t.d.mu.Lock()
	if t.d.pings[string(key)] {
		t.pings++
	}
	t.d.mu.Unlock()
	t.Transaction.Set(key, value)
}

func (t *pingCountingTx) Commit(ctx context.Context) error {
	if t.pings > 1 {
		t.d.refused.Add(1)
		return udb.Error{Code: udb.CodeNotCommitted}
	}
	return t.Transaction.Commit(ctx)
}

func (t *pingCountingTx) OnError(ctx context.Context, err error) error {
	t.pings = 0
	return t.Transaction.OnError(ctx, err)
}

func (t *pingCountingTx) Reset() {
	t.pings = 0
	t.Transaction.Reset()
}

func TestDisconnectOnClose(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, ci := connect(t, e, "pool", "k")
	if connID(t, e, ci.RunnerID).IsZero() {
		t.Fatal("no connection id after init")
	}
	_ = c.Close(websocket.StatusNormalClosure, "pegboard.runner_shutdown")
	eventually(t, "the runner disconnected", func() bool { return connID(t, e, ci.RunnerID).IsZero() })
	// Reconnecting keeps the runner id and gives it a connection again.
	_, ci2 := connect(t, e, "pool", "k")
	if ci2.RunnerID != ci.RunnerID {
		t.Fatalf("runner id %s after reconnect, want %s", ci2.RunnerID, ci.RunnerID)
	}
	if connID(t, e, ci.RunnerID).IsZero() {
		t.Fatal("no connection id after reconnect")
	}
}

func TestCloseGoingAway(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, _ := connect(t, e, "pool", "k")
	go e.node.Server.Close()
	waitClose(t, c, websocket.StatusInternalError, "ws.going_away")
}

// TestBadFrameAfterInit: garbage after init closes that socket with ws.invalid_packet, a text
// frame after init is ignored, and another runner's socket is not affected.
func TestBadFrameAfterInit(t *testing.T) {
	e := start(t, hostsocktest.Config{Runner: hostsock.Timing{PingInterval: 20 * time.Millisecond}})
	bad, _ := connect(t, e, "pool", "bad")
	good, _ := connect(t, e, "pool", "good")
	if err := bad.Write(context.Background(), websocket.MessageText, []byte("ignored")); err != nil {
		t.Fatal(err)
	}
	if err := bad.Write(context.Background(), websocket.MessageBinary, []byte{0x63}); err != nil {
		t.Fatal(err)
	}
	waitClose(t, bad, websocket.StatusInternalError, "ws.invalid_packet")
	// The other socket still gets pings and its pongs are taken.
	for range 2 {
		m, err := recv(t, good)
		if err != nil {
			t.Fatal(err)
		}
		p, ok := m.(proto.ToClientPing)
		if !ok {
			t.Fatalf("got %T", m)
		}
		send(t, good, proto.ToServerPong{Ts: p.Ts})
	}
}

func TestFrameTooLarge(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, _ := connect(t, e, "pool", "big")
	go func() {
		_ = c.Write(context.Background(), websocket.MessageBinary, make([]byte, hostsock.MaxMessage+1))
	}()
	waitClose(t, c, websocket.StatusInternalError, "ws.invalid_packet")
}
