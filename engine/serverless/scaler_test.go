package serverless

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// runnerEndpoint answers GET /api/rivet/start as a rivetkit 2.2.1 app does (an init event,
// then pings, until the engine closes it) and reports each request's headers on starts.
func runnerEndpoint(t *testing.T) (*httptest.Server, chan http.Header) {
	starts := make(chan http.Header, 64)
	var n sync.Mutex
	count := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/rivet/start" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		n.Lock()
		count++
		rid := fmt.Sprintf("runner-%d", count)
		n.Unlock()
		starts <- r.Header.Clone()
		msg, _ := proto.EncodeServerlessInit(proto.ToServerlessServerInit{RunnerID: rid, RunnerProtocolVersion: 7}, 7)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\nevent: ping\ndata:\n\n", base64.StdEncoding.EncodeToString(msg))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv, starts
}

// queue puts n actors in the pool's queue, bumping its demand counter as the lifecycle does.
func queue(t *testing.T, db udb.Database, ns id.ID, n int) {
	t.Helper()
	if _, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (struct{}, error) {
		for range n {
			keys.Set(tx, keys.PendingActorKey{Namespace: ns, Selector: "sl", Ts: time.Now().UnixMilli(), ActorID: id.New(1)}, 1)
		}
		keys.Add(tx, keys.ServerlessDemandKey{Namespace: ns, Name: "sl"}, 1)
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

func awaitStarts(t *testing.T, starts chan http.Header, n int) []http.Header {
	t.Helper()
	var out []http.Header
	for range n {
		select {
		case h := <-starts:
			out = append(out, h)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d /start requests, want %d", len(out), n)
		}
	}
	return out
}

// The scaler opens one request per queued actor (one slot per runner) as the pool's demand
// counter changes, with the reference's headers; three init events clear the pool's error.
func TestScalerFollowsDemand(t *testing.T) {
	srv, starts := runnerEndpoint(t)
	db, ns := storeWith(t, srv.URL+"/api/rivet", `,"headers":{"x-secret":"s3cret"}`)
	if _, err := udb.Transact(context.Background(), db, func(tx udb.Transaction) (struct{}, error) {
		runnerconfig.SetPoolError(tx, ns, "sl", json.RawMessage(`"serverless_stream_ended_early"`))
		return struct{}{}, nil
	}); err != nil {
		t.Fatal(err)
	}
	st := &Starter{DB: db, Client: outbound.NewClient(outbound.Options{Policy: loopback}), Policy: loopback,
		Endpoint: "http://127.0.0.1:6420", Token: "tok", UserAgent: "berth/test", Log: slog.Default()}
	sc := NewScaler(Scaler{DB: db, Starter: st, NodeID: "n1", Drain: func(context.Context, id.ID) error { return nil }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { sc.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	queue(t, db, ns, 1)
	h := awaitStarts(t, starts, 1)[0]
	for k, want := range map[string]string{"X-Secret": "s3cret", "X-Rivet-Endpoint": "http://127.0.0.1:6420/", "X-Rivet-Total-Slots": "1",
		"X-Rivet-Runner-Name": "sl", "X-Rivet-Namespace-Name": "default", "X-Rivet-Namespace-Id": "default", "X-Rivet-Token": "tok",
		"Accept": "text/event-stream", "User-Agent": "berth/test"} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s: %q, want %q", k, got, want)
		}
	}
	queue(t, db, ns, 2)
	awaitStarts(t, starts, 2)
	deadline := time.Now().Add(10 * time.Second)
	for {
		e, err := udb.ReadTransact(context.Background(), db, func(r udb.ReadTransaction) (runnerconfig.Entry, error) {
			return runnerconfig.Get(context.Background(), r, runnerconfig.GetInput{Namespace: ns, Name: "sl"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if e.PoolError == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pool error %s stayed after three inits", e.PoolError)
		}
		time.Sleep(10 * time.Millisecond) // polling interval: the inits are counted in the scaler's goroutines
	}
	select {
	case h := <-starts:
		t.Fatalf("a fourth /start for three actors: %v", h)
	default:
	}
}
