package hostsock_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/ops/actor"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// owner is the node holding h's socket, "" for none.
func owner(t *testing.T, db udb.Database, h actor.Host) string {
	t.Helper()
	o, err := udb.ReadTransact(context.Background(), db, func(r udb.ReadTransaction) (opnode.Owner, error) {
		o, _, err := opnode.SocketOwner(context.Background(), r, opnode.SocketOwnerInput{Socket: h.Socket, NowMs: time.Now().UnixMilli()})
		return o, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return o.NodeID
}

// TestEnvoyClusterOwnership: of two nodes on one store and bus, the one an envoy connects to
// claims its socket, and commands from the other reach it there; when the envoy reconnects
// to the other node, that node claims it and evicts the old socket over the bus; the old
// socket's release leaves the new claim and the envoy alone, and the new socket's end
// releases the record with the envoy's expiry.
func TestEnvoyClusterOwnership(t *testing.T) {
	bus := pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	quiet := hostsock.Timing{PingInterval: time.Hour}
	e := startEnvoys(t, hostsocktest.Config{ID: "a", Bus: bus, Envoy: quiet})
	b, hsB := serveEnvoys(t, e.db, hostsocktest.Config{ID: "b", Bus: bus, Envoy: quiet})
	one := actor.EnvoyHost(e.ns, "envoy-1")

	old, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	eventually(t, "node a's claim", func() bool { return owner(t, e.db, one) == "a" })
	if !e.node.Registry.Holds(one) || b.Registry.Holds(one) {
		t.Fatalf("a holds %v, b holds %v", e.node.Registry.Holds(one), b.Registry.Holds(one))
	}
	stop := actor.Command{Host: one, Checkpoint: actor.Checkpoint{ActorID: id.New(label), Generation: 1, Index: 2}, StopReason: actor.StopReasonDestroy}
	b.Cluster.SendCommands(one, []actor.Command{stop})
	cmds := nextEnvoy[proto.ToEnvoyCommands](old)
	if len(cmds) != 1 || cmds[0].Checkpoint.Index != 2 || cmds[0].Inner != (proto.CommandStopActor{Reason: proto.StopActorReasonDestroy}) {
		t.Fatalf("commands from node b: %+v", cmds)
	}

	s2, _ := connectEnvoy(t, e, hsB, "envoy-1")
	old.closed(websocket.StatusNormalClosure, "ws.eviction")
	eventually(t, "node a's release of the old socket", func() bool { return e.node.Server.Active() == 0 })
	if got := owner(t, e.db, one); got != "b" {
		t.Fatalf("owner %q after the old socket's release, want b", got)
	}
	if expired(t, e, "envoy-1") {
		t.Fatal("the old socket's release expired the envoy its new socket holds")
	}

	_ = s2.c.Close(websocket.StatusNormalClosure, "")
	eventually(t, "node b's release", func() bool { return owner(t, e.db, one) == "" && expired(t, e, "envoy-1") })
}
