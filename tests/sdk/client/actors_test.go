package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"sync"
	"testing"

	apipeer "github.com/berthhq/berth/api-peer"
	apipublic "github.com/berthhq/berth/api-public"
	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/engine/pegboard"
	"github.com/berthhq/berth/engine/serverless"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
	"github.com/berthhq/berth/sdk/client"
)

// actorsEngine serves the real public API of one datacenter ("dc", label 1) over an
// in-memory store with the default namespace, a config for the pool "pool" and no runner,
// and returns a client of it whose every exchange is checked against openapi.yaml. It may
// call serverless endpoints on loopback addresses.
func actorsEngine(t *testing.T) (*client.Client, udb.Database) {
	t.Helper()
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (keys.RunnerConfig, error) {
		out, err := namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(1), NowMs: 1000})
		if err != nil {
			return keys.RunnerConfig{}, err
		}
		return runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: out.Namespace.NamespaceID, Name: "pool"})
	}); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	topo := apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{{Name: "dc", Label: 1, IsLeader: true, PeerURL: "http://127.0.0.1:1"}}}
	acts := pegboard.NewActors(pegboard.ActorsOptions{DB: db, Watchers: pegboard.NewWatchers(), Log: quiet, Config: actor.DefaultConfig(), Label: 1, Datacenter: "dc"})
	policy := outbound.Policy{AllowedCIDRs: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	sl := serverless.New(db, serverless.Fetcher{Client: &http.Client{}, Policy: policy}, quiet)
	peer := apipeer.New(apipeer.Deps{DB: db, Topology: topo, Log: quiet, Actors: acts, Serverless: sl}).Handler()
	peers := apihttp.NewPeerClient(apihttp.PeerOptions{}).WithLocal(1, peer)
	t.Cleanup(peers.Close)
	srv := httptest.NewServer(apipublic.New(apipublic.Deps{DB: db, Topology: topo, Peers: peers, Log: quiet, Outbound: policy}).Handler())
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, client.WithHTTPClient(openapitest.NewClient(t)))
	if err != nil {
		t.Fatal(err)
	}
	return c, db
}

func TestActors(t *testing.T) {
	c, db := actorsEngine(t)
	ctx := context.Background()
	acts := c.Actors()

	a, err := acts.Create(ctx, client.ActorCreateOptions{Name: "counter", Key: "k1", Input: []byte{0, 1, 2, 0xff},
		Pool: "pool", CrashPolicy: client.CrashSleep, Datacenter: "dc"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Name != "counter" || a.Key == nil || *a.Key != "k1" || a.Datacenter != "dc" || a.CrashPolicy != client.CrashSleep || a.SleepTs == nil {
		t.Fatalf("created %+v", a)
	}
	// The input arrived as bytes.
	aid, _ := id.Parse(a.ActorId)
	err = udb.View(ctx, db, func(r udb.ReadTransaction) error {
		b, _, err := keys.GetChunked(ctx, r, keys.ActorInputKey{ActorID: aid})
		if err == nil && string(b) != "\x00\x01\x02\xff" {
			err = fmt.Errorf("input stored as %q", b)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	// A duplicate key names the holder.
	_, err = acts.Create(ctx, client.ActorCreateOptions{Name: "counter", Key: "k1", Pool: "pool", CrashPolicy: client.CrashDestroy})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 409 || !errors.Is(err, &client.APIError{Group: "actor", Code: "duplicate_key"}) ||
		apiErr.Metadata["existing_actor_id"] != a.ActorId {
		t.Fatalf("duplicate key: %v", err)
	}

	// GetOrCreate: concurrent calls with one key create one actor.
	var wg sync.WaitGroup
	got := make([]client.Actor, 8)
	created := make([]bool, 8)
	errs := make([]error, 8)
	for i := range got {
		wg.Go(func() {
			got[i], created[i], errs[i] = acts.GetOrCreate(ctx, client.ActorCreateOptions{Name: "room", Key: "lobby", Pool: "pool", CrashPolicy: client.CrashRestart})
		})
	}
	wg.Wait()
	n := 0
	for i := range got {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if created[i] {
			n++
		}
		if got[i].ActorId != got[0].ActorId {
			t.Fatalf("GetOrCreate %d: %s, want %s", i, got[i].ActorId, got[0].ActorId)
		}
	}
	if n != 1 {
		t.Fatalf("%d created", n)
	}
	room := got[0]

	// Get, Sleep, Reschedule.
	if g, err := acts.Get(ctx, room.ActorId); err != nil || g.PendingAllocationTs == nil {
		t.Fatalf("Get: %+v %v", g, err)
	}
	if err := acts.Sleep(ctx, room.ActorId); err != nil {
		t.Fatal(err)
	}
	if g, _ := acts.Get(ctx, room.ActorId); g.SleepTs == nil || g.PendingAllocationTs != nil {
		t.Fatalf("after Sleep: %+v", g)
	}
	if err := acts.Reschedule(ctx, room.ActorId); err != nil {
		t.Fatal(err)
	}
	if g, _ := acts.Get(ctx, room.ActorId); g.PendingAllocationTs == nil {
		t.Fatalf("after Reschedule: %+v", g)
	}
	if _, err := acts.Get(ctx, id.New(1).String()); !errors.Is(err, &client.APIError{Group: "actor", Code: "not_found"}) {
		t.Fatalf("Get of an unknown actor: %v", err)
	}

	// All pages through every actor of a name, newest first.
	var ids []string
	for range 7 {
		a, err := acts.Create(ctx, client.ActorCreateOptions{Name: "many", Pool: "pool", CrashPolicy: client.CrashSleep})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, a.ActorId)
	}
	all, err := client.Collect(acts.All(ctx, client.ActorListOptions{Name: "many", Limit: 3}))
	if err != nil || len(all) != 7 {
		t.Fatalf("All: %d actors, %v", len(all), err)
	}
	var listed []string
	for _, a := range all {
		listed = append(listed, a.ActorId)
	}
	slices.Sort(listed)
	slices.Sort(ids)
	if !slices.Equal(listed, ids) {
		t.Fatalf("All listed %v, want %v", listed, ids)
	}
	byKey, err := acts.List(ctx, client.ActorListOptions{Name: "counter", Key: "k1"})
	if err != nil || len(byKey.Items) != 1 || byKey.Items[0].ActorId != a.ActorId || byKey.Next == "" {
		t.Fatalf("by key: %+v %v", byKey, err)
	}
	if after, err := acts.List(ctx, client.ActorListOptions{Name: "counter", Key: "k1", Cursor: byKey.Next}); err != nil || len(after.Items) != 0 || after.Next != "" {
		t.Fatalf("by key, after the holder: %+v %v", after, err)
	}

	// Destroy, twice; then only IncludeDestroyed lists it.
	for range 2 {
		if err := acts.Destroy(ctx, a.ActorId); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := acts.Get(ctx, a.ActorId); err != nil || g.DestroyTs == nil {
		t.Fatalf("after Destroy: %+v %v", g, err)
	}
	if p, _ := acts.List(ctx, client.ActorListOptions{Name: "counter"}); len(p.Items) != 0 {
		t.Fatalf("destroyed actor listed: %+v", p.Items)
	}
	if p, _ := acts.List(ctx, client.ActorListOptions{Name: "counter", IncludeDestroyed: true}); len(p.Items) != 1 {
		t.Fatalf("with destroyed: %+v", p.Items)
	}

	// Names, in order, paged.
	names, err := client.Collect(acts.AllNames(ctx, client.NameListOptions{Limit: 2}))
	if err != nil {
		t.Fatal(err)
	}
	var gotNames []string
	for _, n := range names {
		if n.Metadata == nil {
			t.Fatalf("%s: nil metadata", n.Name)
		}
		gotNames = append(gotNames, n.Name)
	}
	if !slices.Equal(gotNames, []string{"counter", "many", "room"}) {
		t.Fatalf("names %v", gotNames)
	}

	// KVGet reads one key, raw bytes in and out (this key's base64 holds a "/").
	key := []byte("\xff\xfe\xfdk")
	roomID, _ := id.Parse(room.ActorId)
	if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
		return actorkv.Put(ctx, tx, actorkv.PutInput{ActorID: roomID, Keys: [][]byte{key}, Values: [][]byte{{0, 'v', 0xff}}, NowMs: 77})
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := acts.KVGet(ctx, room.ActorId, key); err != nil || string(v.Value) != "\x00v\xff" || v.UpdateTs != 77 {
		t.Fatalf("KVGet: %+v %v", v, err)
	}
	if _, err := acts.KVGet(ctx, room.ActorId, []byte("nope")); !errors.Is(err, &client.APIError{Group: "actor", Code: "kv_key_not_found"}) {
		t.Fatalf("KVGet of a missing key: %v", err)
	}

	// A bad id is refused by the engine, naming the field.
	err = acts.Destroy(ctx, "nope")
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest || apiErr.Metadata["field"] != "actor_id" {
		t.Fatalf("Destroy(nope): %v", err)
	}
}
