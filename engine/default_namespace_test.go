package engine

import (
	"context"
	"testing"

	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/udb"
)

// TestDefaultNamespace: the leader creates "default" at its first start and finds it at the
// next; a datacenter that is not the leader keeps no namespaces.
func TestDefaultNamespace(t *testing.T) {
	ctx := context.Background()
	resolve := func(db udb.Database) (namespace.Namespace, error) {
		return udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (namespace.Namespace, error) {
			return namespace.ResolveByName(ctx, r, namespace.ResolveByNameInput{Name: namespace.DefaultName})
		})
	}
	cfg := testConfig("")
	cfg.Database.URL = "file://" + t.TempDir() + "/db"
	first := startEngine(t, cfg)
	ns, err := resolve(first.DB())
	if err != nil || ns.NamespaceID.Label() != 1 {
		t.Fatalf("after the first start: %+v, %v", ns, err)
	}
	if err := first.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := resolve(startEngine(t, cfg).DB())
	if err != nil || again != ns {
		t.Errorf("after a restart: %+v, %v; want %+v", again, err, ns)
	}

	follower := testConfig("")
	leader := follower.Topology.Datacenters["default"]
	leader.IsLeader = false
	follower.Topology.Datacenters["default"] = leader
	other := leader
	other.DatacenterLabel, other.IsLeader = 2, true
	follower.Topology.Datacenters["other"] = other
	if _, err := resolve(startEngine(t, follower).DB()); err == nil {
		t.Error("a follower created the default namespace")
	}
}
