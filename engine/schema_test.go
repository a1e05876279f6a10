package engine

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/schema"
	"github.com/berthhq/berth/pkg/udb"
	"github.com/berthhq/berth/pkg/udb/transfer"
	"github.com/berthhq/berth/sdk/client"
)

var updateStore = flag.Bool("update-store", false, "rewrite "+releaseStore+" from a store built through the API")

// releaseStore is a store written by this release (schema version 1, not recorded, as in
// every store written before versions were), in the export format: what a user upgrading
// from it has on disk.
const releaseStore = "testdata/store-schema-1.export"

// fillReleaseStore writes what releaseStore holds through e's public API: namespace team-a,
// a runner config "pool" in it, and actors "room" with keys r1, r2 (destroyed) and r3.
func fillReleaseStore(t *testing.T, cl *client.Client) {
	ctx := context.Background()
	if _, err := cl.Namespaces().Create(ctx, "team-a", "Team A"); err != nil {
		t.Fatal(err)
	}
	team := cl.InNamespace("team-a")
	if _, err := team.RunnerConfigs().Upsert(ctx, "pool", map[string]client.RunnerConfig{"default": {Normal: &client.RunnerConfigNormal{}}}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"r1", "r2", "r3"} {
		a, err := team.Actors().Create(ctx, client.ActorCreateOptions{Name: "room", Key: key, Pool: "pool", CrashPolicy: client.CrashSleep, Input: []byte(key)})
		if err != nil {
			t.Fatal(err)
		}
		if key == "r2" {
			if err := team.Actors().Destroy(ctx, a.ActorId); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// An engine starts on a store written by this release and serves what it holds; the store
// then records the schema version. (`go test ./engine -run TestStoreOfThisRelease
// -update-store` writes the store again.)
func TestStoreOfThisRelease(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig("")
	cfg.Database.URL = "file://" + filepath.Join(t.TempDir(), "db")
	if *updateStore {
		e := startEngine(t, cfg)
		fillReleaseStore(t, newClient(t, e))
		// Stores written before schema versions were recorded have none.
		if err := udb.Update(ctx, e.DB(), func(tx udb.Transaction) error {
			keys.Clear(tx, keys.SchemaVersionKey{})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := transfer.Export(ctx, e.DB(), &buf, transfer.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(releaseStore, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(releaseStore)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	db, err := udb.Open(ctx, cfg.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transfer.Import(ctx, db, f, transfer.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	e := startEngine(t, cfg)
	team := newClient(t, e).InNamespace("team-a")
	live, err := client.Collect(team.Actors().All(ctx, client.ActorListOptions{Name: "room"}))
	if err != nil {
		t.Fatal(err)
	}
	var liveKeys []string
	for _, a := range live {
		liveKeys = append(liveKeys, *a.Key)
	}
	if slices.Sort(liveKeys); !slices.Equal(liveKeys, []string{"r1", "r3"}) {
		t.Errorf("live actors' keys %v, want r1 and r3", liveKeys)
	}
	all, err := client.Collect(team.Actors().All(ctx, client.ActorListOptions{Name: "room", IncludeDestroyed: true}))
	if err != nil || len(all) != 3 {
		t.Errorf("every actor: %d, %v; want 3", len(all), err)
	}
	configs, err := team.RunnerConfigs().List(ctx, client.RunnerConfigListOptions{})
	if _, ok := configs["pool"]; err != nil || !ok {
		t.Errorf("runner configs %v, %v; want pool", configs, err)
	}
	if _, err := team.Actors().Create(ctx, client.ActorCreateOptions{Name: "room", Key: "r1", Pool: "pool", CrashPolicy: client.CrashSleep}); err == nil {
		t.Error("a create with the key of a live actor of the old store succeeded")
	}
	v, err := udb.ReadTransact(ctx, e.DB(), func(r udb.ReadTransaction) (uint32, error) {
		v, _, err := keys.Get(ctx, r, keys.SchemaVersionKey{})
		return v, err
	})
	if err != nil || v != schema.Current {
		t.Errorf("schema version %d, %v; want %d recorded", v, err, schema.Current)
	}
}

// An engine refuses a store written by a newer berth, and says so.
func TestStoreOfANewerRelease(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig("")
	cfg.Database.URL = "file://" + filepath.Join(t.TempDir(), "db")
	db, err := udb.Open(ctx, cfg.Database.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.SchemaVersionKey{}, schema.Current+1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	e, err := Start(ctx, Options{Config: cfg, Log: quiet})
	if err == nil {
		e.Shutdown(ctx)
		t.Fatal("an engine started on a store of a newer schema version")
	}
	if !errors.Is(err, schema.ErrNewer) || !strings.Contains(err.Error(), "written by a newer berth") {
		t.Errorf("start on a newer store: %v", err)
	}
}

func newClient(t *testing.T, e *Engine) *client.Client {
	t.Helper()
	cl, err := client.New("http://" + e.PublicAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
