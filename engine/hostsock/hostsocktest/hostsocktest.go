// Package hostsocktest runs a host-socket server with the control plane behind it, as an
// engine node wires them (engine.Start) but without the APIs and listeners, for tests of the
// sockets and of the runner SDK.
package hostsocktest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/engine/cluster"
	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/udb"
)

// Config configures a Node; zero fields mean the engine's defaults.
type Config struct {
	Label      uint16 // the datacenter label; 0 means 1
	AdminToken string
	Log        *slog.Logger
	// ID and Bus make this one of several nodes on one store: they share Bus (nil: a memory
	// bus of the node's own).
	ID  string
	Bus pubsub.PubSub
	// Actor is the actors' timings; nil means actor.DefaultConfig.
	Actor *actor.Config
	// Runner and Envoy are the hosts' heartbeats and lost thresholds.
	Runner, Envoy hostsock.Timing
	// InitTimeout, ActorStopThreshold and ServerlessDrainGrace are hostsock.Options'.
	InitTimeout, ActorStopThreshold, ServerlessDrainGrace time.Duration
	// MaxTunnels bounds the tunnels of one socket (hostsock.NewRegistry); 0: no bound.
	MaxTunnels int
}

// Node is one engine node's host sockets and control plane over a store.
type Node struct {
	Server    *hostsock.Server
	Registry  *hostsock.Registry
	Cluster   *cluster.Node
	Lifecycle *pegboard.Lifecycle
	stop      func()
}

// Start wires a node over db and runs it until the test ends (or Stop).
func Start(t testing.TB, db udb.Database, c Config) *Node {
	t.Helper()
	if c.Label == 0 {
		c.Label = 1
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	bus := c.Bus
	if bus == nil {
		bus = pubsub.NewMemory()
	}
	cfg := actor.DefaultConfig()
	if c.Actor != nil {
		cfg = *c.Actor
	}
	a := auth.Admin(c.AdminToken)
	registry := hostsock.NewRegistry(nil, c.MaxTunnels)
	watchers := pegboard.NewWatchers()
	node := cluster.New(cluster.Options{DB: db, Bus: bus, ID: c.ID, Label: c.Label, Log: c.Log, Auth: a,
		Local: registry, Changes: watchers})
	lc := pegboard.NewLifecycle(pegboard.LifecycleOptions{
		DB: db, Hosts: node, Watchers: watchers, Log: c.Log, Config: cfg, Label: c.Label, Datacenter: "default",
		RunnerLostThreshold: c.Runner.LostThreshold, EnvoyLostThreshold: c.Envoy.LostThreshold,
		Announce: func(ids []id.ID) {
			if c.Bus != nil {
				node.AnnounceActors(ids)
			}
		},
	})
	srv, err := hostsock.New(hostsock.Options{
		DB: db, Label: c.Label, Auth: a, Log: c.Log,
		Registry: registry, Cluster: node, Actors: lc.Actors, Runners: lc.Runners, Envoys: lc.Envoys,
		ResolveNamespace: func(ctx context.Context, name string) (namespace.Namespace, error) {
			return udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (namespace.Namespace, error) {
				return namespace.ResolveByName(ctx, r, namespace.ResolveByNameInput{Name: name})
			})
		},
		Runner: c.Runner, Envoy: c.Envoy, InitTimeout: c.InitTimeout, ActorStopThreshold: c.ActorStopThreshold,
		ServerlessDrainGrace: c.ServerlessDrainGrace,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(context.Background(), "http://127.0.0.1:1"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		lc.Run(ctx)
	}()
	n := &Node{Server: srv, Registry: registry, Cluster: node, Lifecycle: lc}
	n.stop = sync.OnceFunc(func() {
		srv.Close()
		node.Stop()
		cancel()
		<-done
		if c.Bus == nil {
			_ = bus.Close()
		}
	})
	t.Cleanup(n.stop)
	return n
}

// Stop closes the node's sockets (ws.going_away: hosts reconnect) and stops it.
func (n *Node) Stop() { n.stop() }
