package envoy

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// A ping and the expiry fenced to the envoy's old socket (its close) race
// with a reconnect from a new socket: all three take their read versions
// before any commits, then commit in every order; each commit after the
// first conflicts and is retried at once. The outcomes are distinct: the
// ping succeeds before both, is refused with envoy.expired after the expiry
// alone, and with envoy.stale_connection after the reconnect; the expiry
// is refused as stale after the reconnect. Refusals write nothing, and the
// reconnect always wins the envoy back.
func TestPingExpireRaceReconnect(t *testing.T) {
	orders := [][]string{
		{"ping", "expire", "reconnect"},
		{"ping", "reconnect", "expire"},
		{"expire", "ping", "reconnect"},
		{"expire", "reconnect", "ping"},
		{"reconnect", "ping", "expire"},
		{"reconnect", "expire", "ping"},
	}
	for _, order := range orders {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			old := input(ns, "envoy-1", "pool", 1000)
			register(t, db, old)
			fresh := input(ns, "envoy-1", "pool", 3000)

			bodies := map[string]func(tx udb.Transaction) error{
				"ping": func(tx udb.Transaction) error {
					_, err := UpdatePing(ctx, tx, UpdatePingInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: old.ConnID, RttMs: 9, NowMs: 2000})
					return err
				},
				"expire": func(tx udb.Transaction) error {
					out, err := Expire(ctx, tx, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: old.ConnID, NowMs: 2500})
					if err == nil && !out.Expired {
						return fmt.Errorf("expire did not expire")
					}
					return err
				},
				"reconnect": func(tx udb.Transaction) error {
					out, err := Register(ctx, tx, fresh)
					if err == nil && (out.New || out.PrevConnID != old.ConnID) {
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
			committed := map[string]bool{}
			wantRtt := uint32(0)
			for i, name := range order {
				err := held[name].Commit()
				if i > 0 {
					if !opstest.IsConflict(err) {
						t.Fatalf("%s committing after another: %v; want not_committed", name, err)
					}
					err = held[name].Retry(err, bodies[name])
				}
				var want rerr.Code
				switch {
				case name == "reconnect":
				case committed["reconnect"]:
					want = rerr.CodeEnvoyStaleConnection
				case name == "ping" && committed["expire"]:
					want = rerr.CodeEnvoyExpired
				}
				if want == 0 && err != nil || want != 0 && !rerr.Is(err, want) {
					t.Fatalf("%s after %v: %v; want %q", name, committed, err, want)
				}
				if err == nil {
					committed[name] = true
					if name == "ping" {
						wantRtt = 9
					}
				}
			}
			e := get(t, db, ns, "envoy-1")
			if e.LastPingTs != 3000 || e.LastRtt != wantRtt || *e.LastConnectedTs != 3000 || e.CreateTs != 1000 {
				t.Fatalf("after %v: %+v", order, e)
			}
			s := opstest.Read(t, db, func(r udb.ReadTransaction) (state, error) {
				s, _, err := readState(ctx, r, ns, "envoy-1")
				return s, err
			})
			if s.connID != fresh.ConnID || s.expired || s.stopped {
				t.Fatalf("after %v: %+v; want the new socket's, not expired", order, s)
			}
			checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
			if _, err := ping(db, ns, "envoy-1", fresh.ConnID, 4000); err != nil {
				t.Fatalf("ping from the new socket: %v", err)
			}
		})
	}
}

// Envoy register twice with the second committing while the first is in
// flight: the later registration wins and names the earlier one for
// eviction, whichever order they read in.
func TestConcurrentRegistrations(t *testing.T) {
	for _, firstWins := range []bool{true, false} {
		db := opstest.Open(t)
		ns := id.New(1)
		a, b := input(ns, "envoy-1", "pool", 1000), input(ns, "envoy-1", "pool", 1001)
		ha, hb := opstest.Begin(t, db), opstest.Begin(t, db)
		run := func(in RegisterInput) func(tx udb.Transaction) error {
			return func(tx udb.Transaction) error { _, err := Register(ctx, tx, in); return err }
		}
		if err := run(a)(ha.Tx()); err != nil {
			t.Fatal(err)
		}
		if err := run(b)(hb.Tx()); err != nil {
			t.Fatal(err)
		}
		first, second, secondIn, firstIn := ha, hb, b, a
		if !firstWins {
			first, second, secondIn, firstIn = hb, ha, a, b
		}
		if err := first.Commit(); err != nil {
			t.Fatal(err)
		}
		err := second.Commit()
		if !opstest.IsConflict(err) {
			t.Fatalf("second registration: %v; want not_committed", err)
		}
		var out RegisterOutput
		if err := second.Retry(err, func(tx udb.Transaction) (err error) {
			out, err = Register(ctx, tx, secondIn)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if out.New || out.PrevConnID != firstIn.ConnID {
			t.Fatalf("retried registration = %+v; want it to evict %s", out, firstIn.ConnID)
		}
		if _, err := ping(db, ns, "envoy-1", firstIn.ConnID, 2000); !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
			t.Fatalf("ping from the evicted socket: %v", err)
		}
		checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
	}
}

// Pingers on successive sockets of one envoy race with the reconnects that
// replace them and with expiries fenced to the replaced sockets. Every ping
// that succeeds committed while its socket was the current one; every
// refusal is stale_connection or expired.
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
	results := make(chan result, sockets*(pingsPerSocket+1))
	var wg sync.WaitGroup
	for s := range sockets {
		in := input(ns, "envoy-1", "pool", 0)
		v, err := opstest.Run(ctx, db, func(tx udb.Transaction) error {
			in.NowMs = now.Add(1)
			_, err := Register(ctx, tx, in)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		regVersion[s] = v
		first := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range pingsPerSocket {
				if i == 1 {
					close(first)
				}
				v, err := opstest.Run(ctx, db, func(tx udb.Transaction) error {
					_, err := UpdatePing(ctx, tx, UpdatePingInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: in.ConnID, RttMs: 1, NowMs: now.Add(1)})
					return err
				})
				results <- result{socket: s, version: v, err: err}
				if err != nil {
					if i == 0 {
						close(first)
					}
					return
				}
			}
		}()
		// The socket's close, racing with everything: an expiry fenced to it.
		go func() {
			defer wg.Done()
			<-first
			_, err := opstest.Run(ctx, db, func(tx udb.Transaction) error {
				_, err := Expire(ctx, tx, ExpireInput{Namespace: ns, EnvoyKey: "envoy-1", ConnID: in.ConnID, NowMs: now.Add(1)})
				return err
			})
			if err != nil && !rerr.Is(err, rerr.CodeEnvoyStaleConnection) {
				results <- result{socket: s, err: fmt.Errorf("expire: %w", err)}
			}
		}()
		<-first
	}
	wg.Wait()
	close(results)
	ok, stale, expired := 0, 0, 0
	for r := range results {
		switch {
		case r.err == nil:
			ok++
			if r.version <= regVersion[r.socket] || r.version >= regVersion[r.socket+1] {
				t.Errorf("socket %d's ping committed at %d, outside its tenure (%d, %d)",
					r.socket, r.version, regVersion[r.socket], regVersion[r.socket+1])
			}
		case rerr.Is(r.err, rerr.CodeEnvoyStaleConnection):
			stale++
		case rerr.Is(r.err, rerr.CodeEnvoyExpired):
			expired++
		default:
			t.Errorf("socket %d: %v", r.socket, r.err)
		}
	}
	if ok == 0 {
		t.Fatal("no ping succeeded")
	}
	t.Logf("%d pings recorded, %d refused as stale, %d as expired", ok, stale, expired)
	checkIndexes(t, db, ns, []string{"envoy-1"}, []string{"pool"})
}

// Listings taken while registrations commit never show an envoy twice nor
// partly written, and never lose one they showed before.
func TestListDuringRegistration(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	const n = 300
	inputs := map[string]RegisterInput{}
	var order []RegisterInput
	for i := range n {
		in := input(ns, fmt.Sprintf("envoy-%03d", i), []string{"a", "b"}[i%2], 5000)
		in.Version = uint32(i)
		in.Metadata = json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))
		inputs[in.EnvoyKey] = in
		order = append(order, in)
	}
	check := func(e Envoy) error {
		in, ok := inputs[e.EnvoyKey]
		if !ok || e.NamespaceID != ns || e.PoolName != in.PoolName || e.Version != in.Version || e.CreateTs != 5000 ||
			e.LastPingTs != 5000 || e.LastConnectedTs == nil || string(e.Metadata) != string(in.Metadata) {
			return fmt.Errorf("envoy listed as %+v", e)
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
	wg.Add(2)
	go func() {
		defer wg.Done()
		var prev []string
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			default:
			}
			out, err := list(db, ListInput{Namespace: ns, Limit: 1000})
			if err != nil {
				errs <- err
				return
			}
			var got []string
			for _, e := range out.Envoys {
				if err := check(e); err != nil {
					errs <- err
					return
				}
				got = append(got, e.EnvoyKey)
			}
			sorted := slices.Clone(got)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(got) {
				errs <- fmt.Errorf("an envoy listed twice")
				return
			}
			for _, p := range prev {
				if !slices.Contains(got, p) {
					errs <- fmt.Errorf("envoy %s listed, then missing", p)
					return
				}
			}
			prev = got
			if finished && len(got) != n {
				errs <- fmt.Errorf("final listing has %d envoys, want %d", len(got), n)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for finished := false; !finished; {
			select {
			case <-done:
				finished = true
			default:
			}
			seen := map[string]bool{}
			in := ListInput{Namespace: ns, PoolName: "b", Limit: 7}
			for {
				out, err := list(db, in)
				if err != nil {
					errs <- err
					return
				}
				for _, e := range out.Envoys {
					if err := check(e); err != nil {
						errs <- err
						return
					}
					if seen[e.EnvoyKey] {
						errs <- fmt.Errorf("envoy %s on two pages", e.EnvoyKey)
						return
					}
					seen[e.EnvoyKey] = true
				}
				if out.Cursor == nil {
					break
				}
				in.Cursor = *out.Cursor
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
