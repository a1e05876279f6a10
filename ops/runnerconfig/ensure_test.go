package runnerconfig

import (
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

func TestEnsure(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	ensure := func(name string) keys.RunnerConfig {
		return opstest.Write(t, db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
			return Ensure(ctx, tx, EnsureInput{Namespace: ns, Name: name})
		})
	}
	// A missing config is created as the default normal one, and listed.
	got := ensure("pool")
	if got.Normal == nil || got.Common().DrainOnVersionUpgrade || got.Common().ActorEvictionRate != 1 {
		t.Fatalf("Ensure of a new name = %+v, want DefaultNormal", got)
	}
	stored := opstest.Read(t, db, func(r udb.ReadTransaction) (Entry, error) {
		return Get(ctx, r, GetInput{Namespace: ns, Name: "pool"})
	})
	if stored.Config.Normal == nil {
		t.Fatalf("stored config = %+v", stored)
	}
	// An existing config is returned as it is, never replaced.
	custom := DefaultNormal()
	custom.Normal.DrainOnVersionUpgrade = true
	opstest.Write(t, db, func(tx udb.Transaction) (UpsertOutput, error) {
		return Upsert(ctx, tx, UpsertInput{Namespace: ns, Name: "pool", Config: custom})
	})
	if got := ensure("pool"); !got.Common().DrainOnVersionUpgrade {
		t.Fatalf("Ensure replaced an existing config: %+v", got)
	}
	// A bad name writes nothing.
	if _, err := opstest.Transact(db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		return Ensure(ctx, tx, EnsureInput{Namespace: ns, Name: ""})
	}); err == nil {
		t.Fatal("Ensure accepted an empty name")
	}
}
