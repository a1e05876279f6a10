package runner

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
	in := input(ns, "pool", "k1", 1000)
	in.Metadata = json.RawMessage(`{"region":"eu","big":"` + strings.Repeat("x", 25_000) + `"}`)
	out := register(t, db, in)
	if !out.New || out.RunnerID != in.NewRunnerID || !out.PrevConnID.IsZero() {
		t.Fatalf("Register = %+v; want the new id, New, no previous connection", out)
	}
	got := get(t, db, out.RunnerID)
	connected := int64(1000)
	want := Runner{
		RunnerID: out.RunnerID, NamespaceID: ns, Datacenter: dc, Name: "pool", Key: "k1", Version: 1,
		TotalSlots: 10, RemainingSlots: 10, CreateTs: 1000, LastPingTs: 1000, LastConnectedTs: &connected,
		Metadata: in.Metadata,
	}
	if !equalRunner(got, want) {
		t.Fatalf("Get =\n%+v\nwant\n%+v", got, want)
	}
	if e := allocEntries(t, db, ns, "pool"); len(e) != 1 || e[0] != (keys.RunnerAllocIdxKey{
		Namespace: ns, Name: "pool", Version: 1, RemainingMillislots: 1000, LastPingTs: 1000, RunnerID: out.RunnerID,
	}) {
		t.Fatalf("allocation index = %+v", e)
	}
	for _, in := range []ListForNsInput{
		{Namespace: ns}, {Namespace: ns, IncludeStopped: true},
		{Namespace: ns, Name: "pool"}, {Namespace: ns, Name: "pool", IncludeStopped: true},
	} {
		page, err := list(db, in)
		if err != nil || len(page.Runners) != 1 || !equalRunner(page.Runners[0], want) || page.Cursor == nil {
			t.Fatalf("ListForNs(%+v) = %+v, %v", in, page, err)
		}
	}
	names := opstest.Read(t, db, func(r udb.ReadTransaction) (ListNamesOutput, error) {
		return ListNames(ctx, r, ListNamesInput{Namespace: ns})
	})
	if len(names.Names) != 1 || names.Names[0] != "pool" {
		t.Fatalf("ListNames = %+v", names)
	}
}

func equalRunner(a, b Runner) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestRunnerJSON(t *testing.T) {
	rid, ns := id.New(1), id.New(1)
	ts := int64(7)
	r := Runner{RunnerID: rid, NamespaceID: ns, Datacenter: "dc", Name: "n", Key: "k", Version: 2, TotalSlots: 3,
		RemainingSlots: 1, CreateTs: 5, LastPingTs: 6, LastRtt: 9}
	b, _ := json.Marshal(r)
	want := `{"runner_id":"` + rid.String() + `","namespace_id":"` + ns.String() + `","datacenter":"dc","name":"n","key":"k",` +
		`"version":2,"total_slots":3,"remaining_slots":1,"create_ts":5,"drain_ts":null,"stop_ts":null,"last_ping_ts":6,` +
		`"last_connected_ts":null,"last_rtt":9,"metadata":null}`
	if string(b) != want {
		t.Fatalf("JSON =\n%s\nwant\n%s", b, want)
	}
	r.DrainTs, r.StopTs, r.LastConnectedTs, r.Metadata = &ts, &ts, &ts, json.RawMessage(`{"a":1}`)
	b, _ = json.Marshal(r)
	for _, part := range []string{`"drain_ts":7`, `"stop_ts":7`, `"last_connected_ts":7`, `"metadata":{"a":1}`} {
		if !strings.Contains(string(b), part) {
			t.Errorf("JSON %s lacks %s", b, part)
		}
	}
}

func TestRegisterValidation(t *testing.T) {
	ns := id.New(1)
	tests := []struct {
		mutate func(*RegisterInput)
		field  string // "" for an internal error
	}{
		{func(in *RegisterInput) { in.Name = "" }, "name"},
		{func(in *RegisterInput) { in.Name = strings.Repeat("n", MaxNameLen+1) }, "name"},
		{func(in *RegisterInput) { in.Name = "bad\xff" }, "name"},
		{func(in *RegisterInput) { in.Key = "" }, "runner_key"},
		{func(in *RegisterInput) { in.Key = strings.Repeat("k", MaxKeyLen+1) }, "runner_key"},
		{func(in *RegisterInput) { in.Metadata = json.RawMessage(`[1]`) }, "metadata"},
		{func(in *RegisterInput) { in.Metadata = json.RawMessage(`{"a":`) }, "metadata"},
		{func(in *RegisterInput) { in.Metadata = json.RawMessage(`null`) }, "metadata"},
		{func(in *RegisterInput) {
			in.Metadata = json.RawMessage(`{"a":"` + strings.Repeat("x", MaxMetadataLen) + `"}`)
		}, "metadata"},
		{func(in *RegisterInput) { in.ActorNames = []ActorName{{Name: ""}} }, "prepopulate_actor_names"},
		{func(in *RegisterInput) { in.ActorNames = []ActorName{{Name: "a", Metadata: json.RawMessage(`[]`)}} }, "prepopulate_actor_names.a.metadata"},
		{func(in *RegisterInput) { in.ActorNames = make([]ActorName, MaxActorNames+1) }, "prepopulate_actor_names"},
		{func(in *RegisterInput) { in.ConnID = id.ID{} }, ""},
		{func(in *RegisterInput) { in.NewRunnerID = id.ID{} }, ""},
		{func(in *RegisterInput) { in.Namespace = id.ID{} }, ""},
	}
	for i, tc := range tests {
		db := opstest.Open(t)
		in := input(ns, "pool", "k", 1)
		tc.mutate(&in)
		_, err := opstest.Transact(db, func(tx udb.Transaction) (RegisterOutput, error) { return Register(ctx, tx, in) })
		e, ok := rerr.As(err)
		switch {
		case !ok:
			t.Errorf("case %d: Register = %v; want an rerr", i, err)
		case tc.field == "" && !rerr.Is(e, rerr.CodeCoreInternalError):
			t.Errorf("case %d: Register = %v; want core.internal_error", i, err)
		case tc.field != "" && (!rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != tc.field):
			t.Errorf("case %d: Register = %v; want api.bad_request naming %s", i, err, tc.field)
		}
		if page, _ := list(db, ListForNsInput{Namespace: in.Namespace, IncludeStopped: true}); len(page.Runners) != 0 {
			t.Errorf("case %d: a refused registration wrote a runner", i)
		}
	}
}

func TestReconnectKeepsID(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	first := input(ns, "pool", "k", 1000)
	a := register(t, db, first)
	// One actor placed: remaining 9 of 10.
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		s, _, err := readState(ctx, tx, a.RunnerID)
		if err != nil {
			return nil, err
		}
		if err := s.unindex(tx); err != nil {
			return nil, err
		}
		s.remaining = 9
		keys.Set(tx, keys.RunnerRemainingSlotsKey{RunnerID: s.id}, 9)
		s.index(tx)
		return nil, nil
	})

	second := input(ns, "pool", "k", 2000)
	second.Version, second.TotalSlots = 2, 4
	b := register(t, db, second)
	if b.New || b.RunnerID != a.RunnerID || b.PrevConnID != first.ConnID {
		t.Fatalf("reconnect = %+v; want runner %s, not new, previous connection %s", b, a.RunnerID, first.ConnID)
	}
	got := get(t, db, a.RunnerID)
	if got.CreateTs != 1000 || got.LastPingTs != 2000 || *got.LastConnectedTs != 2000 || got.Version != 2 ||
		got.TotalSlots != 4 || got.RemainingSlots != 3 || got.Metadata != nil {
		t.Fatalf("after reconnect: %+v; want create_ts kept, ping and connection 2000, version 2, 3 of 4 slots free", got)
	}
	checkAllocIndex(t, db, ns, "pool")
	if _, err := ping(db, a.RunnerID, first.ConnID, 3000); !rerr.Is(err, rerr.CodeRunnerStaleConnection) {
		t.Fatalf("ping from the replaced socket = %v; want runner.stale_connection", err)
	}
	if _, err := ping(db, a.RunnerID, second.ConnID, 3000); err != nil {
		t.Fatalf("ping from the current socket: %v", err)
	}
	// The same socket registering again (a retried init) evicts nobody.
	second.NowMs = 4000
	if c := register(t, db, second); c.RunnerID != a.RunnerID || !c.PrevConnID.IsZero() {
		t.Fatalf("re-registration by the current socket = %+v", c)
	}
	checkAllocIndex(t, db, ns, "pool")
	// Shrinking below the slots in use leaves none free.
	second.TotalSlots = 0
	register(t, db, second)
	if got := get(t, db, a.RunnerID); got.TotalSlots != 0 || got.RemainingSlots != 0 {
		t.Fatalf("slots after shrinking to 0: %d of %d free", got.RemainingSlots, got.TotalSlots)
	}
	checkAllocIndex(t, db, ns, "pool")
}

// Once a runner drains, stops or expires, the same key registers a new
// runner; the old one keeps its id and history.
func TestLeavingReleasesKey(t *testing.T) {
	for _, leave := range []string{"expire", "drain", "stop"} {
		t.Run(leave, func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			a := register(t, db, input(ns, "pool", "k", 1000))
			opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
				var err error
				switch leave {
				case "expire":
					_, err = Expire(ctx, tx, ExpireInput{RunnerID: a.RunnerID, NowMs: 2000})
				case "drain":
					_, err = Drain(ctx, tx, DrainInput{RunnerID: a.RunnerID, NowMs: 2000})
				case "stop":
					_, err = Stop(ctx, tx, StopInput{RunnerID: a.RunnerID, NowMs: 2000})
				}
				return nil, err
			})
			b := register(t, db, input(ns, "pool", "k", 3000))
			if !b.New || b.RunnerID == a.RunnerID || !b.PrevConnID.IsZero() {
				t.Fatalf("register after %s = %+v; want a new runner id", leave, b)
			}
			if c := register(t, db, input(ns, "pool", "k", 4000)); c.New || c.RunnerID != b.RunnerID {
				t.Fatalf("the next reconnect = %+v; want runner %s again", c, b.RunnerID)
			}
			old := get(t, db, a.RunnerID)
			if old.Key != "k" || old.CreateTs != 1000 {
				t.Fatalf("old runner changed: %+v", old)
			}
			checkAllocIndex(t, db, ns, "pool")
			if e := allocEntries(t, db, ns, "pool"); len(e) != 1 || e[0].RunnerID != b.RunnerID {
				t.Fatalf("allocation index %+v; want only the new runner", e)
			}
		})
	}
}

func TestLifecycle(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	in := input(ns, "pool", "k", 1000)
	rid := register(t, db, in).RunnerID
	write := func(f func(tx udb.Transaction) (any, error)) any { return opstest.Write(t, db, f) }
	inActive := func() bool {
		page, err := list(db, ListForNsInput{Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Runners) == 1
	}

	if out, err := ping(db, rid, in.ConnID, 1500); err != nil || !out.Indexed || out.PrevPingTs != 1000 {
		t.Fatalf("ping = %+v, %v", out, err)
	}
	checkAllocIndex(t, db, ns, "pool")

	// A drain from a stale socket is refused.
	_, err := opstest.Transact(db, func(tx udb.Transaction) (DrainOutput, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid, ConnID: id.New(1), NowMs: 1900})
	})
	if !rerr.Is(err, rerr.CodeRunnerStaleConnection) {
		t.Fatalf("fenced drain from another socket = %v", err)
	}
	if out := write(func(tx udb.Transaction) (any, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid, ConnID: in.ConnID, NowMs: 2000})
	}).(DrainOutput); !out.Drained {
		t.Fatal("drain did not drain")
	}
	if out := write(func(tx udb.Transaction) (any, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid, NowMs: 2100})
	}).(DrainOutput); out.Drained {
		t.Fatal("second drain reported draining")
	}
	r := get(t, db, rid)
	if r.DrainTs == nil || *r.DrainTs != 2000 || r.StopTs != nil || !inActive() {
		t.Fatalf("drained runner: %+v; want drain_ts 2000, still listed", r)
	}
	if e := allocEntries(t, db, ns, "pool"); len(e) != 0 {
		t.Fatalf("drained runner still in the allocation index: %+v", e)
	}
	// Pings are recorded, outside the index.
	if out, err := ping(db, rid, in.ConnID, 2500); err != nil || out.Indexed {
		t.Fatalf("ping while draining = %+v, %v", out, err)
	}
	if r := get(t, db, rid); r.LastPingTs != 2500 || r.LastRtt != 3 {
		t.Fatalf("ping while draining not recorded: %+v", r)
	}
	checkAllocIndex(t, db, ns, "pool")

	// Expire with a recent ping does nothing.
	if out := write(func(tx udb.Transaction) (any, error) {
		return Expire(ctx, tx, ExpireInput{RunnerID: rid, NowMs: 3000, PingBeforeMs: 2500})
	}).(ExpireOutput); out.Expired {
		t.Fatal("expired a runner whose ping is not older than PingBeforeMs")
	}
	if out := write(func(tx udb.Transaction) (any, error) {
		return Stop(ctx, tx, StopInput{RunnerID: rid, NowMs: 4000})
	}).(StopOutput); !out.Stopped {
		t.Fatal("stop did not stop")
	}
	if out := write(func(tx udb.Transaction) (any, error) {
		return Stop(ctx, tx, StopInput{RunnerID: rid, NowMs: 4100})
	}).(StopOutput); out.Stopped {
		t.Fatal("second stop reported stopping")
	}
	if r := get(t, db, rid); r.StopTs == nil || *r.StopTs != 4000 || inActive() {
		t.Fatalf("stopped runner: %+v; want stop_ts 4000, not in the active list", r)
	}
	if page, _ := list(db, ListForNsInput{Namespace: ns, IncludeStopped: true}); len(page.Runners) != 1 {
		t.Fatal("stopped runner missing from include_stopped")
	}
	if out := write(func(tx udb.Transaction) (any, error) {
		return Expire(ctx, tx, ExpireInput{RunnerID: rid, NowMs: 20_000, PingBeforeMs: 5000})
	}).(ExpireOutput); !out.Expired {
		t.Fatal("expire of a stopped runner with an old ping did not expire it")
	}
	if r := get(t, db, rid); *r.StopTs != 4000 {
		t.Fatalf("expire changed stop_ts: %d", *r.StopTs)
	}
	if out, err := ping(db, rid, in.ConnID, 21_000); err != nil || out.Indexed {
		t.Fatalf("ping after expiry = %+v, %v; want recorded outside the index", out, err)
	}
	checkAllocIndex(t, db, ns, "pool")

	// Disconnect: out of the index, socket forgotten, pings refused.
	rid2 := register(t, db, input(ns, "pool", "k2", 30_000))
	conn2 := opstest.Read(t, db, func(r udb.ReadTransaction) (id.ID, error) {
		v, _, err := keys.Get(ctx, r, keys.RunnerConnIDKey{RunnerID: rid2.RunnerID})
		return v, err
	})
	if _, err := opstest.Transact(db, func(tx udb.Transaction) (any, error) {
		return nil, Disconnect(ctx, tx, DisconnectInput{RunnerID: rid2.RunnerID, ConnID: id.New(1)})
	}); !rerr.Is(err, rerr.CodeRunnerStaleConnection) {
		t.Fatalf("disconnect of another socket = %v", err)
	}
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		return nil, Disconnect(ctx, tx, DisconnectInput{RunnerID: rid2.RunnerID, ConnID: conn2})
	})
	if e := allocEntries(t, db, ns, "pool"); len(e) != 0 {
		t.Fatalf("disconnected runner still indexed: %+v", e)
	}
	if _, err := ping(db, rid2.RunnerID, conn2, 31_000); !rerr.Is(err, rerr.CodeRunnerStaleConnection) {
		t.Fatalf("ping after disconnect = %v", err)
	}
	// Reconnecting brings it back, same id.
	if c := register(t, db, input(ns, "pool", "k2", 32_000)); c.RunnerID != rid2.RunnerID || !c.PrevConnID.IsZero() {
		t.Fatalf("reconnect after disconnect = %+v", c)
	}
	checkAllocIndex(t, db, ns, "pool")
}

func TestUnknownRunner(t *testing.T) {
	db := opstest.Open(t)
	rid := id.New(1)
	errs := map[string]error{}
	_, errs["get"] = opstest.Transact(db, func(tx udb.Transaction) (Runner, error) { return Get(ctx, tx, GetInput{RunnerID: rid}) })
	_, errs["ping"] = ping(db, rid, id.New(1), 1)
	_, errs["drain"] = opstest.Transact(db, func(tx udb.Transaction) (DrainOutput, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: rid})
	})
	_, errs["stop"] = opstest.Transact(db, func(tx udb.Transaction) (StopOutput, error) {
		return Stop(ctx, tx, StopInput{RunnerID: rid})
	})
	_, errs["expire"] = opstest.Transact(db, func(tx udb.Transaction) (ExpireOutput, error) {
		return Expire(ctx, tx, ExpireInput{RunnerID: rid})
	})
	_, errs["disconnect"] = opstest.Transact(db, func(tx udb.Transaction) (any, error) {
		return nil, Disconnect(ctx, tx, DisconnectInput{RunnerID: rid, ConnID: id.New(1)})
	})
	for op, err := range errs {
		if !rerr.Is(err, rerr.CodeRunnerNotFound) {
			t.Errorf("%s of an unknown runner = %v; want runner.not_found", op, err)
		}
	}
}

func TestCorruptRecord(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	rid := register(t, db, input(ns, "pool", "k", 1)).RunnerID
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		tx.Set(keys.RunnerVersionKey{RunnerID: rid}.Pack(), []byte{1})
		return nil, nil
	})
	if _, err := opstest.Transact(db, func(tx udb.Transaction) (Runner, error) {
		return Get(ctx, tx, GetInput{RunnerID: rid})
	}); !rerr.Is(err, rerr.CodeStoreCorrupt) {
		t.Fatalf("Get of a corrupt runner = %v; want store.corrupt", err)
	}
	if _, err := ping(db, rid, id.New(1), 2); !rerr.Is(err, rerr.CodeStoreCorrupt) {
		t.Fatalf("ping of a corrupt runner = %v; want store.corrupt", err)
	}
	if _, err := list(db, ListForNsInput{Namespace: ns}); !rerr.Is(err, rerr.CodeStoreCorrupt) {
		t.Fatalf("list with a corrupt runner = %v; want store.corrupt", err)
	}
}

// load reads a runner, metadata included, in its two prefetched ranges and
// nothing else, and skips the actor command subspace between them.
func TestLoadReadsTwoRanges(t *testing.T) {
	db := opstest.Open(t)
	in := input(id.New(1), "pool", "k", 1)
	in.Metadata = json.RawMessage(`{"big":"` + strings.Repeat("x", 30_000) + `"}`)
	rid := register(t, db, in).RunnerID
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		c := &countingReader{ReadTransaction: r.Snapshot()}
		got, found, err := load(ctx, c, rid, dc)
		if err != nil || !found || string(got.Metadata) != string(in.Metadata) || got.LastPingTs != 1 || got.RemainingSlots != 10 {
			t.Fatalf("load = %+v, %v, %v", got, found, err)
		}
		if c.gets != 0 || c.ranges != 2 {
			t.Fatalf("load made %d point reads and %d range reads; want 0 and 2", c.gets, c.ranges)
		}
		return nil, nil
	})
}
