package runner

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Two pings from a runner's old socket race with a reconnect from its new
// socket: all three transactions take their read versions before any
// commits, then commit in every order. A ping that commits before the
// reconnect succeeds; one whose commit comes after it conflicts, and its
// retry fails with runner.stale_connection and writes nothing.
func TestPingsRaceReconnect(t *testing.T) {
	orders := [][]string{
		{"ping1", "ping2", "reconnect"},
		{"ping1", "reconnect", "ping2"},
		{"ping2", "reconnect", "ping1"},
		{"reconnect", "ping1", "ping2"},
		{"reconnect", "ping2", "ping1"},
		{"ping2", "ping1", "reconnect"},
	}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			old := input(ns, "pool", "k", 1000)
			rid := register(t, db, old).RunnerID
			fresh := input(ns, "pool", "k", 3000)

			bodies := map[string]func(tx udb.Transaction) error{
				"ping1": func(tx udb.Transaction) error {
					_, err := UpdatePing(ctx, tx, UpdatePingInput{RunnerID: rid, ConnID: old.ConnID, RttMs: 11, NowMs: 2000})
					return err
				},
				"ping2": func(tx udb.Transaction) error {
					_, err := UpdatePing(ctx, tx, UpdatePingInput{RunnerID: rid, ConnID: old.ConnID, RttMs: 22, NowMs: 2500})
					return err
				},
				"reconnect": func(tx udb.Transaction) error {
					out, err := Register(ctx, tx, fresh)
					if err == nil && (out.RunnerID != rid || out.PrevConnID != old.ConnID) {
						return fmt.Errorf("reconnect = %+v", out)
					}
					return err
				},
			}
			held := map[string]*opstest.Held{}
			for _, name := range order {
				held[name] = opstest.Begin(t, db)
			}
			for _, name := range order {
				if err := bodies[name](held[name].Tx()); err != nil {
					t.Fatalf("%s before any commit: %v", name, err)
				}
			}
			reconnected := false
			wantRtt := uint32(0)
			for i, name := range order {
				err := held[name].Commit()
				if i == 0 {
					if err != nil {
						t.Fatalf("first commit (%s): %v", name, err)
					}
				} else {
					if !opstest.IsConflict(err) {
						t.Fatalf("%s committing after another: %v; want not_committed", name, err)
					}
					err = held[name].Retry(err, bodies[name])
				}
				switch {
				case name == "reconnect":
					if err != nil {
						t.Fatalf("reconnect: %v", err)
					}
					reconnected = true
				case reconnected:
					if !rerr.Is(err, rerr.CodeRunnerStaleConnection) {
						t.Fatalf("%s after the reconnect: %v; want runner.stale_connection", name, err)
					}
				default:
					if err != nil {
						t.Fatalf("%s before the reconnect: %v", name, err)
					}
					wantRtt = map[string]uint32{"ping1": 11, "ping2": 22}[name]
				}
			}
			r := get(t, db, rid)
			if r.LastPingTs != 3000 || r.LastRtt != wantRtt || *r.LastConnectedTs != 3000 {
				t.Fatalf("after %v: last ping %d, rtt %d, connected %d; want 3000, %d, 3000",
					order, r.LastPingTs, r.LastRtt, *r.LastConnectedTs, wantRtt)
			}
			conn := opstest.Read(t, db, func(r udb.ReadTransaction) (id.ID, error) {
				v, _, err := keys.Get(ctx, r, keys.RunnerConnIDKey{RunnerID: rid})
				return v, err
			})
			if conn != fresh.ConnID {
				t.Fatal("the connection id is not the new socket's")
			}
			checkAllocIndex(t, db, ns, "pool")
		})
	}
}

// Pingers on successive sockets of one runner race with the reconnects that
// replace them. Every ping that succeeds committed while its socket was the
// current one: after that socket's registration and before the next.
func TestPingReconnectStress(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	const sockets, pingsPerSocket = 16, 40
	var now atomic.Int64
	now.Store(1000)

	type result struct {
		socket  int
		version int64
		err     error
	}
	regVersion := make([]int64, sockets+1)
	regVersion[sockets] = math.MaxInt64
	results := make(chan result, sockets*pingsPerSocket)
	var rid id.ID
	var wg sync.WaitGroup
	for s := range sockets {
		in := input(ns, "pool", "k", now.Add(1))
		var out RegisterOutput
		v, err := opstest.Run(ctx, db, func(tx udb.Transaction) (err error) {
			in.NowMs = now.Add(1)
			out, err = Register(ctx, tx, in)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if s == 0 {
			rid = out.RunnerID
		} else if out.RunnerID != rid || out.New {
			t.Fatalf("reconnect %d = %+v", s, out)
		}
		regVersion[s] = v
		first := make(chan struct{}) // the socket's first ping is done
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range pingsPerSocket {
				if i == 1 {
					close(first)
				}
				v, err := opstest.Run(ctx, db, func(tx udb.Transaction) error {
					_, err := UpdatePing(ctx, tx, UpdatePingInput{RunnerID: rid, ConnID: in.ConnID, RttMs: uint32(s), NowMs: now.Add(1)})
					return err
				})
				results <- result{socket: s, version: v, err: err}
				if err != nil {
					if i == 0 {
						close(first)
					}
					return // superseded: every later ping is stale too
				}
			}
		}()
		<-first // the next reconnect races with this socket's pings
	}
	wg.Wait()
	close(results)
	ok, stale := 0, 0
	for r := range results {
		switch {
		case r.err == nil:
			ok++
			if r.version <= regVersion[r.socket] || r.version >= regVersion[r.socket+1] {
				t.Errorf("socket %d's ping committed at %d, outside its tenure (%d, %d)",
					r.socket, r.version, regVersion[r.socket], regVersion[r.socket+1])
			}
		case rerr.Is(r.err, rerr.CodeRunnerStaleConnection):
			stale++
			if r.socket == sockets-1 {
				t.Errorf("the current socket's ping was refused: %v", r.err)
			}
		default:
			t.Errorf("socket %d: %v", r.socket, r.err)
		}
	}
	if ok == 0 {
		t.Fatal("no ping succeeded")
	}
	t.Logf("%d pings recorded, %d refused as stale", ok, stale)
	checkAllocIndex(t, db, ns, "pool")
}

// Listings taken while registrations commit never show a runner twice nor
// a runner only partly written, and never lose one they showed before.
func TestListDuringRegistration(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	const n = 300
	inputs := map[string]RegisterInput{}
	var order []RegisterInput
	for i := range n {
		in := input(ns, []string{"a", "b"}[i%2], fmt.Sprintf("key-%03d", i), 5000) // one millisecond
		in.Version, in.TotalSlots = uint32(i), uint32(i%7+1)
		in.Metadata = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		inputs[in.Key] = in
		order = append(order, in)
	}
	check := func(r Runner) error {
		in, ok := inputs[r.Key]
		switch {
		case !ok:
			return fmt.Errorf("unknown runner %+v", r)
		case r.RunnerID != in.NewRunnerID || r.NamespaceID != ns || r.Name != in.Name || r.Version != in.Version ||
			r.TotalSlots != in.TotalSlots || r.RemainingSlots != in.TotalSlots || r.CreateTs != 5000 ||
			r.LastPingTs != 5000 || r.LastConnectedTs == nil || string(r.Metadata) != string(in.Metadata) ||
			r.Datacenter != dc:
			return fmt.Errorf("runner %s listed as %+v", in.Key, r)
		}
		return nil
	}

	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for _, in := range order {
			if _, err := opstest.Transact(db, func(tx udb.Transaction) (RegisterOutput, error) { return Register(ctx, tx, in) }); err != nil {
				t.Error(err)
				return
			}
		}
	}()

	errs := make(chan error, 2)
	// One whole listing per transaction: each a superset of the previous.
	wg.Add(1)
	go func() {
		defer wg.Done()
		var prev []id.ID
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true // one more listing after the last commit
			default:
			}
			out, err := list(db, ListForNsInput{Namespace: ns, Limit: 1000})
			if err != nil {
				errs <- err
				return
			}
			var got []id.ID
			for _, r := range out.Runners {
				if err := check(r); err != nil {
					errs <- err
					return
				}
				got = append(got, r.RunnerID)
			}
			if dup := firstDuplicate(got); dup != nil {
				errs <- fmt.Errorf("runner %s listed twice", dup)
				return
			}
			for _, p := range prev {
				if !slices.Contains(got, p) {
					errs <- fmt.Errorf("runner %s listed, then missing", p)
					return
				}
			}
			prev = got
			if finished && len(got) != n {
				errs <- fmt.Errorf("final listing has %d runners, want %d", len(got), n)
			}
		}
	}()
	// Paging across transactions while registrations commit: no runner on
	// two pages.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			default:
			}
			var got []id.ID
			in := ListForNsInput{Namespace: ns, Name: "a", Limit: 7}
			for {
				out, err := list(db, in)
				if err != nil {
					errs <- err
					return
				}
				for _, r := range out.Runners {
					if err := check(r); err != nil {
						errs <- err
						return
					}
					got = append(got, r.RunnerID)
				}
				if out.Cursor == nil {
					break
				}
				in.Cursor = *out.Cursor
			}
			if dup := firstDuplicate(got); dup != nil {
				errs <- fmt.Errorf("runner %s on two pages", dup)
				return
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func firstDuplicate(ids []id.ID) *id.ID {
	seen := map[id.ID]bool{}
	for _, v := range ids {
		if seen[v] {
			return &v
		}
		seen[v] = true
	}
	return nil
}
