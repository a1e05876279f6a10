package pegboard

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// closedEnvoys records the envoy sockets the lifecycle closes.
type closedEnvoys struct {
	mu   sync.Mutex
	seen map[string]rerr.Code // envoy key → code
}

func (c *closedEnvoys) CloseSocket(h actor.Host, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[h.EnvoyKey] = rerr.CodeOf(err)
}

func (c *closedEnvoys) SendCommands(actor.Host, []actor.Command) {}

func (c *closedEnvoys) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// The active-index range of every namespace holds the entries of each namespace and
// nothing else.
func TestActiveEnvoysRange(t *testing.T) {
	begin, end := activeEnvoysRange()
	for _, ns := range []id.ID{id.New(1), id.New(7)} {
		for _, k := range []keys.ActiveEnvoyKey{{Namespace: ns, CreateTs: 0, EnvoyKey: "abc"}, {Namespace: ns, CreateTs: 1 << 50, EnvoyKey: "zzz"}} {
			b := k.Pack()
			if bytes.Compare(b, begin) < 0 || bytes.Compare(b, end) >= 0 {
				t.Fatalf("%+v outside the range", k)
			}
		}
		other := keys.ActiveEnvoyByNameKey{Namespace: ns, PoolName: "p", CreateTs: 1, EnvoyKey: "abc"}.Pack()
		if bytes.Compare(other, begin) >= 0 && bytes.Compare(other, end) < 0 {
			t.Fatal("a by-pool entry inside the range")
		}
	}
}

// The loop expires every envoy of every namespace that stopped pinging, more than one scan
// batch of them, leaves fresh ones alone, and closes the expired ones' sockets.
func TestLoopExpiresLostEnvoys(t *testing.T) {
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	nss := []id.ID{id.New(1), id.New(1)}
	const n = scanBatch + 30
	old := time.Now().Add(-time.Hour).UnixMilli()
	register := func(ns id.ID, key string, now int64) {
		in := openvoy.RegisterInput{Namespace: ns, EnvoyKey: key, PoolName: "pool", Version: 1, ProtocolVersion: 8, ConnID: id.New(1), NowMs: now}
		if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (openvoy.RegisterOutput, error) { return openvoy.Register(ctx, tx, in) }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		register(nss[i%2], fmt.Sprintf("lost-%03d", i), old)
	}
	sockets := &closedEnvoys{seen: map[string]rerr.Code{}}
	p := NewEnvoys(EnvoysOptions{DB: db, Hosts: sockets, Log: quiet, LostThreshold: 300 * time.Millisecond,
		Actors: NewActors(ActorsOptions{DB: db, Hosts: sockets, Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig()})})
	// Registered now and kept pinging: never expired.
	register(nss[0], "fresh", time.Now().UnixMilli())
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(loopCtx)
	}()
	stopPing := make(chan struct{})
	pinged := make(chan struct{})
	go func() {
		defer close(pinged)
		for {
			select {
			case <-stopPing:
				return
			case <-time.After(50 * time.Millisecond):
			}
			_, _ = udb.Transact(ctx, db, func(tx udb.Transaction) (openvoy.UpdatePingOutput, error) {
				conn, _, err := keys.Get(ctx, tx, keys.EnvoyConnIDKey{Namespace: nss[0], EnvoyKey: "fresh"})
				if err != nil {
					return openvoy.UpdatePingOutput{}, err
				}
				return openvoy.UpdatePing(ctx, tx, openvoy.UpdatePingInput{Namespace: nss[0], EnvoyKey: "fresh", ConnID: conn, NowMs: time.Now().UnixMilli()})
			})
		}
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(10 * time.Second)
	for sockets.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond) // more than one lost threshold: "fresh" would be due
	close(stopPing)
	<-pinged
	if got := sockets.count(); got != n {
		t.Fatalf("%d of %d lost envoys expired (%v)", got, n, sockets.seen["fresh"])
	}
	for key, why := range sockets.seen {
		if why != rerr.CodeEnvoyExpired {
			t.Fatalf("envoy %s closed with %s, want envoy.expired", key, why)
		}
	}
	for _, ns := range nss {
		res, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (openvoy.ListOutput, error) {
			return openvoy.List(ctx, r, openvoy.ListInput{Namespace: ns})
		})
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, e := range res.Envoys {
			left = append(left, e.EnvoyKey)
		}
		want := 0
		if ns == nss[0] {
			want = 1
		}
		if len(left) != want || want == 1 && left[0] != "fresh" {
			t.Fatalf("namespace %v: active %v", ns, left)
		}
	}
}

// Stopping drains (stop_ts, out of the index) and closes the socket with ws.eviction;
// the disconnect then expires the envoy, and a stale socket's stop or disconnect is refused
// or ignored.
func TestEnvoyStoppingAndDisconnect(t *testing.T) {
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ns, conn, stale := id.New(1), id.New(1), id.New(1)
	in := openvoy.RegisterInput{Namespace: ns, EnvoyKey: "env", PoolName: "pool", Version: 1, ProtocolVersion: 8, ConnID: conn, NowMs: time.Now().UnixMilli()}
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (openvoy.RegisterOutput, error) { return openvoy.Register(ctx, tx, in) }); err != nil {
		t.Fatal(err)
	}
	sockets := &closedEnvoys{seen: map[string]rerr.Code{}}
	p := NewEnvoys(EnvoysOptions{DB: db, Hosts: sockets, Log: quiet, LostThreshold: time.Minute,
		Actors: NewActors(ActorsOptions{DB: db, Hosts: sockets, Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig()})})
	if err := p.Stopping(ctx, ns, "env", stale); !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
		t.Fatalf("stale stop: %v", err)
	}
	if err := p.Stopping(ctx, ns, "env", conn); err != nil {
		t.Fatal(err)
	}
	if sockets.seen["env"] != rerr.CodeWSEviction {
		t.Fatalf("socket closed with %q", sockets.seen["env"])
	}
	get := func() openvoy.Envoy {
		res, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (openvoy.Envoy, error) {
			return openvoy.Get(ctx, r, openvoy.GetInput{Namespace: ns, EnvoyKey: "env"})
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if get().StopTs == nil {
		t.Fatal("no stop_ts")
	}
	if err := p.Disconnected(ctx, ns, "env", stale); err != nil {
		t.Fatal(err)
	}
	isExpired := func() bool {
		res, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (bool, error) {
			_, ok, err := keys.Get(ctx, r, keys.EnvoyExpiredTsKey{Namespace: ns, EnvoyKey: "env"})
			return ok, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if isExpired() {
		t.Fatal("a stale socket's disconnect expired the envoy")
	}
	if err := p.Disconnected(ctx, ns, "env", conn); err != nil || !isExpired() {
		t.Fatalf("disconnect: %v, expired %v", err, isExpired())
	}
}
