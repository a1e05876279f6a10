package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/pubsub"
)

// flowTunnel is a host's tunnel that counts the response consumption reported to it and
// refuses request-body chunks once cancelled is set.
type flowTunnel struct {
	out       chan proto.ToServerTunnelMessageKind
	closed    chan struct{}
	closeOnce sync.Once

	mu        sync.Mutex
	consumed  int
	chunks    int
	cancelled bool
}

func (f *flowTunnel) Send(m proto.ToClientTunnelMessageKind) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := m.(proto.ToClientRequestChunk); ok {
		if f.cancelled {
			return core.ErrRequestBodyCancelled
		}
		f.chunks++
	}
	return nil
}

func (f *flowTunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	select {
	case m := <-f.out:
		return m, nil
	case <-f.closed:
		return nil, context.Canceled
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (f *flowTunnel) Close() { f.closeOnce.Do(func() { close(f.closed) }) }

func (f *flowTunnel) ConsumedResponseBody(n int) error {
	f.mu.Lock()
	f.consumed += n
	f.mu.Unlock()
	return nil
}

type tunnelLocal struct {
	*fakeLocal
	tun *flowTunnel
}

func (l tunnelLocal) OpenTunnel(actor.Host) (Tunnel, error) { return l.tun, nil }

// A relayed tunnel carries the envoy flow control the runner protocol cannot: the client's
// consumption of a streamed response reaches the host's tunnel, and the host's request-body
// cancel makes the gateway's later chunks fail with core.ErrRequestBodyCancelled while the
// response goes on.
func TestRelayFlowControl(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	h := actor.EnvoyHost(id.New(1), "envoy-b")
	ft := &flowTunnel{out: make(chan proto.ToServerTunnelMessageKind, 4), closed: make(chan struct{})}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	nb := New(Options{DB: db, Bus: bus, ID: "b", Label: 1, Lease: 3 * time.Second, Releases: 8})
	handler = nb.RelayHandler()
	if err := nb.Start(context.Background(), tunnelLocal{newFakeLocal(h), ft}, srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Stop)
	if _, err := nb.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	na := startNode(t, db, bus, "a", 8, newFakeLocal())

	tun, err := na.OpenRemoteTunnel(h)
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	consumer, ok := tun.(interface{ ConsumedResponseBody(int) error })
	if !ok {
		t.Fatal("a relayed tunnel takes no response consumption")
	}
	if err := tun.Send(proto.ToClientRequestChunk{Body: []byte("a")}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1000, 24} {
		if err := consumer.ConsumedResponseBody(n); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the consumption relayed", func() bool { ft.mu.Lock(); defer ft.mu.Unlock(); return ft.consumed == 1024 && ft.chunks == 1 })

	ft.mu.Lock()
	ft.cancelled = true
	ft.mu.Unlock()
	if err := tun.Send(proto.ToClientRequestChunk{Body: []byte("b")}); err != nil {
		t.Fatal(err) // the relay learns of the cancel with this chunk
	}
	waitFor(t, "the body cancel relayed back", func() bool {
		return tun.Send(proto.ToClientRequestChunk{Body: []byte("c")}) == core.ErrRequestBodyCancelled
	})
	ft.out <- proto.ToServerResponseStart{Status: 200}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if m, err := tun.Recv(ctx); err != nil || m.(proto.ToServerResponseStart).Status != 200 {
		t.Fatalf("the response after the cancel: %+v %v", m, err)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
