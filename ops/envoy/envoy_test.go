package envoy

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

func TestRegisterNew(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "envoy-1", "pool", 1000)
	in.Metadata = json.RawMessage(`{"gpu":"` + strings.Repeat("a", 25_000) + `"}`)
	out := register(t, db, in)
	if !out.New || !out.PrevConnID.IsZero() {
		t.Fatalf("Register = %+v", out)
	}
	connected := int64(1000)
	want := Envoy{EnvoyKey: "envoy-1", NamespaceID: ns, Datacenter: dc, PoolName: "pool", Version: 1, Slots: 0,
		CreateTs: 1000, LastPingTs: 1000, LastConnectedTs: &connected, Metadata: in.Metadata}
	if got := get(t, db, ns, "envoy-1"); !equalEnvoy(got, want) {
		t.Fatalf("Get =\n%+v\nwant\n%+v", got, want)
	}
	slots := opstest.Read(t, db, func(r udb.ReadTransaction) ([]byte, error) {
		return r.Get(ctx, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: "envoy-1"}.Pack())
	})
	if len(slots) != 8 {
		t.Fatalf("slot counter not created: %x", slots)
	}
	checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
	if e := lbEntries(t, db, ns, "pool"); len(e) != 1 || e[0].LastPingTs != 1000 || e[0].Version != 1 {
		t.Fatalf("load-balancer index = %+v", e)
	}
}

func TestEnvoyJSON(t *testing.T) {
	ns := id.New(1)
	e := Envoy{EnvoyKey: "k", NamespaceID: ns, Datacenter: "dc", PoolName: "p", Version: 2, Slots: 3, CreateTs: 4, LastPingTs: 5, LastRtt: 6}
	b, _ := json.Marshal(e)
	want := `{"envoy_key":"k","namespace_id":"` + ns.String() + `","datacenter":"dc","pool_name":"p","version":2,"slots":3,` +
		`"create_ts":4,"stop_ts":null,"last_ping_ts":5,"last_connected_ts":null,"last_rtt":6,"metadata":null}`
	if string(b) != want {
		t.Fatalf("JSON =\n%s\nwant\n%s", b, want)
	}
	var fields map[string]any
	json.Unmarshal(b, &fields)
	if len(fields) != 12 {
		t.Fatalf("%d fields, want the 12 of Rivet's Envoy", len(fields))
	}
}

// Missing ping fields and slot counter read as 0, as Rivet reads them.
func TestGetMissingPingFields(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Set(tx, keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: "old-envoy"}, "pool")
		keys.Set(tx, keys.EnvoyVersionKey{Namespace: ns, EnvoyKey: "old-envoy"}, 3)
		keys.Set(tx, keys.EnvoyCreateTsKey{Namespace: ns, EnvoyKey: "old-envoy"}, 77)
		return nil, nil
	})
	got := get(t, db, ns, "old-envoy")
	want := Envoy{EnvoyKey: "old-envoy", NamespaceID: ns, Datacenter: dc, PoolName: "pool", Version: 3, CreateTs: 77}
	if !equalEnvoy(got, want) {
		t.Fatalf("Get = %+v, want %+v", got, want)
	}
	// A negative counter (more releases than placements) reads as 0.
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Add(tx, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: "old-envoy"}, -2)
		return nil, nil
	})
	if got := get(t, db, ns, "old-envoy"); got.Slots != 0 {
		t.Fatalf("slots = %d", got.Slots)
	}
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		keys.Add(tx, keys.EnvoySlotsKey{Namespace: ns, EnvoyKey: "old-envoy"}, 7)
		return nil, nil
	})
	if got := get(t, db, ns, "old-envoy"); got.Slots != 5 {
		t.Fatalf("slots = %d, want 5", got.Slots)
	}
}

func TestRegisterValidation(t *testing.T) {
	ns := id.New(1)
	tests := []struct {
		mutate func(*RegisterInput)
		field  string
	}{
		{func(in *RegisterInput) { in.EnvoyKey = "ab" }, "envoy_key"},
		{func(in *RegisterInput) { in.EnvoyKey = strings.Repeat("k", MaxEnvoyKeyLen+1) }, "envoy_key"},
		{func(in *RegisterInput) { in.EnvoyKey = "-abc" }, "envoy_key"},
		{func(in *RegisterInput) { in.EnvoyKey = "abc-" }, "envoy_key"},
		{func(in *RegisterInput) { in.EnvoyKey = "a.bc" }, "envoy_key"},
		{func(in *RegisterInput) { in.PoolName = "" }, "pool_name"},
		{func(in *RegisterInput) { in.PoolName = strings.Repeat("p", MaxPoolNameLen+1) }, "pool_name"},
		{func(in *RegisterInput) { in.Metadata = json.RawMessage(`1`) }, "metadata"},
		{func(in *RegisterInput) { in.ConnID = id.ID{} }, ""},
		{func(in *RegisterInput) { in.Namespace = id.ID{} }, ""},
	}
	for i, tc := range tests {
		db := opstest.Open(t)
		in := input(ns, "a_b-C9", "pool", 1)
		tc.mutate(&in)
		_, err := opstest.Transact(db, func(tx udb.Transaction) (RegisterOutput, error) { return Register(ctx, tx, in) })
		e, ok := rerr.As(err)
		switch {
		case !ok:
			t.Errorf("case %d: %v", i, err)
		case tc.field == "" && !rerr.Is(e, rerr.CodeCoreInternalError):
			t.Errorf("case %d: %v; want core.internal_error", i, err)
		case tc.field != "" && (!rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != tc.field):
			t.Errorf("case %d: %v; want api.bad_request naming %s", i, err, tc.field)
		}
	}
	// The Rivet engine's lenient ident: letters of both cases, digits, '-', '_'.
	db := opstest.Open(t)
	register(t, db, input(ns, "Ab_9-x", "pool", 1))
	register(t, db, input(ns, strings.Repeat("k", MaxEnvoyKeyLen), strings.Repeat("p", MaxPoolNameLen), 1))
}

// A second registration of one envoy key replaces the connection and
// reports the first for eviction; create_ts stays the first registration's.
func TestRegisterTwiceEvicts(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	first := input(ns, "envoy-1", "pool", 1000)
	register(t, db, first)
	if _, err := ping(db, ns, "envoy-1", first.ConnID, 1500); err != nil {
		t.Fatal(err)
	}
	second := input(ns, "envoy-1", "pool", 2000)
	second.Version = 2
	out := register(t, db, second)
	if out.New || out.PrevConnID != first.ConnID {
		t.Fatalf("second Register = %+v; want not new, previous connection %s", out, first.ConnID)
	}
	got := get(t, db, ns, "envoy-1")
	if got.CreateTs != 1000 || got.LastPingTs != 2000 || *got.LastConnectedTs != 2000 || got.Version != 2 || got.LastRtt != 4 {
		t.Fatalf("after the second registration: %+v", got)
	}
	if _, err := ping(db, ns, "envoy-1", first.ConnID, 2500); !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
		t.Fatalf("ping from the evicted socket = %v; want envoy.stale_connection", err)
	}
	if got := get(t, db, ns, "envoy-1"); got.LastPingTs != 2000 || got.LastRtt != 4 {
		t.Fatalf("the refused ping wrote: %+v", got)
	}
	checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
	if e := lbEntries(t, db, ns, "pool"); len(e) != 1 || e[0].Version != 2 || e[0].LastPingTs != 2000 {
		t.Fatalf("load-balancer index = %+v; want one entry, version 2, ping 2000", e)
	}
	// The same socket registering again evicts nobody.
	second.NowMs = 3000
	if out := register(t, db, second); !out.PrevConnID.IsZero() {
		t.Fatalf("re-registration by the current socket = %+v", out)
	}
	// Moving to another pool moves every index entry.
	third := input(ns, "envoy-1", "other", 4000)
	register(t, db, third)
	checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool", "other"})
	if len(lbEntries(t, db, ns, "pool")) != 0 || len(activeKeys(t, db, ns, "pool")) != 0 {
		t.Fatal("entries left in the old pool")
	}
}

func TestPingOutcomes(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, db udb.Database, ns id.ID, conn id.ID) id.ID // returns the conn to ping with
		err   rerr.Code
		lb    bool // entry moved to the new ping
	}{
		{"current socket", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID { return conn }, 0, true},
		{"replaced socket", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID {
			register(t, db, input(ns, "envoy-1", "pool", 1500))
			return conn
		}, rerr.CodeEnvoyStaleConnection, false},
		{"expired", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID {
			if _, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1500}); err != nil {
				t.Fatal(err)
			}
			return conn
		}, rerr.CodeEnvoyExpired, false},
		{"replaced and expired", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID {
			register(t, db, input(ns, "envoy-1", "pool", 1400))
			if _, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1500}); err != nil {
				t.Fatal(err)
			}
			return conn
		}, rerr.CodeEnvoyStaleConnection, false},
		{"draining", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID {
			if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1500}); err != nil {
				t.Fatal(err)
			}
			return conn
		}, 0, false},
		{"never registered", func(t *testing.T, db udb.Database, ns, conn id.ID) id.ID {
			opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
				keys.Clear(tx, keys.EnvoyPoolNameKey{Namespace: ns, EnvoyKey: "envoy-1"})
				return nil, nil
			})
			return conn
		}, rerr.CodeEnvoyNotFound, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			in := input(ns, "envoy-1", "pool", 1000)
			register(t, db, in)
			conn := tc.setup(t, db, ns, in.ConnID)
			before := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
				s, _, err := readState(ctx, r, ns, "envoy-1")
				return s, err
			})
			out, err := ping(db, ns, "envoy-1", conn, 2000)
			if tc.err != 0 {
				if !rerr.Is(err, tc.err) {
					t.Fatalf("ping = %v; want %s", err, tc.err)
				}
				after := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
					s, _, err := readState(ctx, r, ns, "envoy-1")
					return s, err
				})
				if after != before {
					t.Fatalf("a refused ping changed the envoy: %+v -> %+v", before, after)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if out.Indexed != tc.lb {
					t.Fatalf("Indexed = %v, want %v", out.Indexed, tc.lb)
				}
				if g := get(t, db, ns, "envoy-1"); g.LastPingTs != 2000 || g.LastRtt != 4 {
					t.Fatalf("ping not recorded: %+v", g)
				}
			}
			e := lbEntries(t, db, ns, "pool")
			if tc.lb != (len(e) == 1 && e[0].LastPingTs == 2000) {
				t.Fatalf("load-balancer index = %+v", e)
			}
			if tc.err != rerr.CodeEnvoyNotFound {
				checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
			}
		})
	}
}

func TestExpireDrainReregister(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "envoy-1", "pool", 1000)
	register(t, db, in)
	all := []string{"envoy-1"}

	// Drain: out of the load balancer, still listed with stop_ts; pings recorded.
	if _, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: id.New(1), NowMs: 1100}); !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
		t.Fatalf("fenced drain from another socket = %v", err)
	}
	if out, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: in.ConnID, NowMs: 1200}); err != nil || !out.Drained {
		t.Fatalf("drain = %+v, %v", out, err)
	}
	if out, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1300}); err != nil || out.Drained {
		t.Fatalf("second drain = %+v, %v", out, err)
	}
	if g := get(t, db, ns, "envoy-1"); g.StopTs == nil || *g.StopTs != 1200 {
		t.Fatalf("drained envoy: %+v", g)
	}
	if page, _ := list(db, ListInput{Namespace: ns}); len(page.Envoys) != 1 || page.Envoys[0].StopTs == nil {
		t.Fatalf("drained envoy not listed with stop_ts: %+v", page)
	}
	if out, err := ping(db, ns, "envoy-1", in.ConnID, 1400); err != nil || out.Indexed {
		t.Fatalf("ping while draining = %+v, %v", out, err)
	}
	checkIndexes(t, db, ns, all, []string{"pool"})

	// Expire: fenced, skip-if-fresh, then for real.
	if _, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: id.New(1), NowMs: 1500}); !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
		t.Fatalf("fenced expiry from another socket = %v", err)
	}
	if out, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", PingBeforeMs: 1400, NowMs: 1500}); err != nil || out.Expired {
		t.Fatalf("expiry of a fresh envoy = %+v, %v", out, err)
	}
	if out, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: in.ConnID, PingBeforeMs: 1401, NowMs: 1500}); err != nil || !out.Expired {
		t.Fatalf("expiry = %+v, %v", out, err)
	}
	if out, err := expire(db, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1600}); err != nil || out.Expired {
		t.Fatalf("second expiry = %+v, %v", out, err)
	}
	if page, _ := list(db, ListInput{Namespace: ns}); len(page.Envoys) != 0 {
		t.Fatalf("expired envoy still listed: %+v", page)
	}
	if g := get(t, db, ns, "envoy-1"); g.EnvoyKey != "envoy-1" {
		t.Fatal("Get does not find the expired envoy")
	}
	if _, err := ping(db, ns, "envoy-1", in.ConnID, 1700); !rerr.Is(err, rerr.CodeEnvoyExpired) {
		t.Fatalf("ping after expiry = %v; want envoy.expired", err)
	}
	if out, err := drain(db, DrainInput{Namespace: ns, EnvoyKey: "envoy-1", NowMs: 1700}); err != nil || out.Drained {
		t.Fatalf("drain of an expired envoy = %+v, %v", out, err)
	}
	checkIndexes(t, db, ns, all, []string{"pool"})

	// Register again: active, indexed, same create_ts, stop_ts cleared.
	again := input(ns, "envoy-1", "pool", 2000)
	if out := register(t, db, again); out.New || out.PrevConnID != in.ConnID {
		t.Fatalf("re-registration = %+v", out)
	}
	g := get(t, db, ns, "envoy-1")
	if g.CreateTs != 1000 || g.StopTs != nil || g.LastPingTs != 2000 {
		t.Fatalf("re-registered envoy: %+v", g)
	}
	if _, err := ping(db, ns, "envoy-1", again.ConnID, 2100); err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, db, ns, all, []string{"pool"})
	if page, _ := list(db, ListInput{Namespace: ns, PoolName: "pool"}); len(page.Envoys) != 1 {
		t.Fatal("re-registered envoy not listed")
	}
}

func TestUnknownEnvoy(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	errs := map[string]error{}
	_, errs["get"] = opstest.Transact(db, func(tx udb.Transaction) (Envoy, error) {
		return Get(ctx, tx, GetInput{Namespace: ns, EnvoyKey: "nope"})
	})
	_, errs["get invalid key"] = opstest.Transact(db, func(tx udb.Transaction) (Envoy, error) {
		return Get(ctx, tx, GetInput{Namespace: ns, EnvoyKey: strings.Repeat("x", 20_000)})
	})
	_, errs["ping"] = ping(db, ns, "nope", id.New(1), 1)
	_, errs["expire"] = expire(db, ExpireInput{Namespace: ns, EnvoyKey: "nope"})
	_, errs["drain"] = drain(db, DrainInput{Namespace: ns, EnvoyKey: "nope"})
	for op, err := range errs {
		if !rerr.Is(err, rerr.CodeEnvoyNotFound) {
			t.Errorf("%s = %v; want envoy.not_found", op, err)
		}
	}
}

func TestLoadReadsTwoRanges(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "envoy-1", "pool", 1)
	in.Metadata = json.RawMessage(`{"m":"` + strings.Repeat("x", 30_000) + `"}`)
	register(t, db, in)
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		c := &countingReader{ReadTransaction: r.Snapshot()}
		e, found, err := load(ctx, c, ns, "envoy-1", dc)
		if err != nil || !found || string(e.Metadata) != string(in.Metadata) || e.LastPingTs != 1 || e.PoolName != "pool" {
			t.Fatalf("load = %+v, %v, %v", e, found, err)
		}
		if c.gets != 0 || c.ranges != 2 {
			t.Fatalf("load made %d point reads and %d range reads; want 0 and 2", c.gets, c.ranges)
		}
		return nil, nil
	})
}
