package serverless

import (
	"context"
	"log/slog"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/udb"
)

// /metadata's actorNames with object metadata become the namespace's actor names; its
// envoy and runner versions are read when they are u32s, ignored otherwise.
func TestApplyMetadata(t *testing.T) {
	ctx := context.Background()
	srv, _ := endpoint(t, 200, `{"actorNames":{"ghost":{"metadata":{"icon":"g"}},"bad":{"metadata":5},"none":{}},`+
		`"envoy":{"version":3},"runner":{"version":"x"},"envoyProtocolVersion":8,"runtime":"rivetkit","version":"2.3.19"}`)
	db, ns := store(t, srv.URL+"/api/rivet")
	m, ferr := fetcher(loopback).Fetch(ctx, srv.URL+"/api/rivet", nil)
	if ferr != nil {
		t.Fatal(ferr)
	}
	if m.EnvoyVersion == nil || *m.EnvoyVersion != 3 || m.RunnerVersion != nil || len(m.ActorNames) != 1 || string(m.ActorNames["ghost"]) != `{"icon":"g"}` {
		t.Fatalf("metadata: envoy %v runner %v names %v", m.EnvoyVersion, m.RunnerVersion, m.ActorNames)
	}
	if err := New(db, fetcher(loopback), slog.New(slog.DiscardHandler)).Refresh(ctx, ns, "sl"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"ghost": true, "bad": false, "none": false} {
		v, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (keys.ActorNameValue, error) {
			v, _, err := keys.Get(ctx, r, keys.ActorNameKey{Namespace: ns, Name: name})
			return v, err
		})
		if err != nil || (v.Metadata != "") != want {
			t.Errorf("actor name %s: %+v %v, want stored %v", name, v, err, want)
		}
	}
}

// An endpoint whose /metadata loses envoyProtocolVersion sets the pool error "downgrade"
// once the pool has a protocol version; before that it stays a runner pool, without error.
func TestDowngrade(t *testing.T) {
	ctx := context.Background()
	srv, _ := endpoint(t, 200, `{"runtime":"rivetkit","version":"2.2.1","runner":{"version":1}}`)
	db, ns := store(t, srv.URL+"/api/rivet")
	s := New(db, fetcher(loopback), slog.New(slog.DiscardHandler))
	poolErr := func() string {
		pe, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (keys.PoolError, error) {
			pe, _, err := keys.Get(ctx, r, keys.RunnerPoolErrorKey{Namespace: ns, Name: "sl"})
			return pe, err
		})
		if err != nil {
			t.Fatal(err)
		}
		return string(pe.Error)
	}
	if err := s.Refresh(ctx, ns, "sl"); err != nil || poolErr() != "" {
		t.Fatalf("a runner pool: %v, pool error %q", err, poolErr())
	}
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (struct{}, error) {
		keys.Set(tx, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: "sl"}, 8)
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(ctx, ns, "sl"); err != nil || poolErr() != `"downgrade"` {
		t.Fatalf("an envoy pool that lost its version: %v, pool error %q", err, poolErr())
	}
}
