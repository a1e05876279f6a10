package cluster

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/pubsub"
	"github.com/berthhq/berth/pkg/rerr"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
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

// An envoy's tunnel is not indexed here: these send as Send does.
func (f *flowTunnel) SendIndexed(m proto.ToClientTunnelMessageKind) (uint16, error) {
	return 0, f.Send(m)
}
func (f *flowTunnel) Resend(_ uint16, m proto.ToClientTunnelMessageKind) error { return f.Send(m) }
func (f *flowTunnel) RequestID() proto.RequestID                               { return proto.RequestID{} }
func (f *flowTunnel) NextIndex() uint16                                        { return 0 }
func (f *flowTunnel) Resumable() bool                                          { return false }

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

func (l tunnelLocal) OpenTunnel(actor.Host, proto.GatewayID, *proto.RequestID, uint16) (guard.ResumableTunnel, error) {
	return l.tun, nil
}

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
	local := tunnelLocal{newFakeLocal(h), ft}
	nb := New(Options{DB: db, Bus: bus, ID: "b", Label: 1, Lease: 3 * time.Second, Releases: 8, Local: local, Changes: local})
	handler = nb.RelayHandler()
	if err := nb.Start(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Stop)
	if _, err := nb.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	na := startNode(t, db, bus, "a", 8, newFakeLocal())

	tun, err := na.OpenRemoteTunnel(h, proto.GatewayID{})
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

// indexTunnel is a runner's tunnel that records the indices its messages were sent under.
type indexTunnel struct {
	flowTunnel
	sent chan uint16
}

func (f *indexTunnel) Resend(idx uint16, m proto.ToClientTunnelMessageKind) error {
	f.sent <- idx
	return nil
}

func (f *indexTunnel) Resumable() bool { return true }

// openedFor records the request a relay opened a runner's tunnel for.
type openedFor struct {
	gw   proto.GatewayID
	req  proto.RequestID
	next uint16
}

// indexLocal opens a fresh indexTunnel, recording indices in sent, for each relay.
type indexLocal struct {
	*fakeLocal
	sent   chan uint16
	opened chan openedFor
}

func (l indexLocal) OpenTunnel(_ actor.Host, gw proto.GatewayID, req *proto.RequestID, next uint16) (guard.ResumableTunnel, error) {
	if req == nil {
		return nil, errors.New("a runner's relay names its request")
	}
	l.opened <- openedFor{gw, *req, next}
	return &indexTunnel{flowTunnel: flowTunnel{out: make(chan proto.ToServerTunnelMessageKind, 4), closed: make(chan struct{})}, sent: l.sent}, nil
}

// A relayed runner tunnel is the gateway's request: opened on the far node under the
// gateway's own id and request id, its messages numbered on the gateway's side (sent again
// under their own numbers), and resumable under the same ids where the runner is next.
func TestRelayedRunnerTunnelIsTheGatewaysRequest(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	rid := id.New(1)
	h := actor.RunnerHost(rid)
	sent := make(chan uint16, 8)
	local := indexLocal{fakeLocal: newFakeLocal(h), sent: sent, opened: make(chan openedFor, 2)}
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	nb := New(Options{DB: db, Bus: bus, ID: "b", Label: 1, Lease: 3 * time.Second, Releases: 8, Local: local, Changes: local})
	handler = nb.RelayHandler()
	if err := nb.Start(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Stop)
	if _, err := nb.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	na := startNode(t, db, bus, "a", 8, newFakeLocal())
	gw := proto.GatewayID{1, 2, 3, 4}

	tun, err := na.OpenRemoteTunnel(h, gw)
	if err != nil {
		t.Fatal(err)
	}
	if !tun.Resumable() {
		t.Fatal("a relayed runner tunnel is not resumable")
	}
	if o := <-local.opened; o.gw != gw || o.req != tun.RequestID() || o.next != 0 {
		t.Fatalf("opened as %+v, want gateway %x request %x from 0", o, gw, tun.RequestID())
	}
	msg := proto.ToClientWebSocketMessage{Data: []byte("x")}
	for want := uint16(0); want < 3; want++ {
		if idx, err := tun.SendIndexed(msg); err != nil || idx != want {
			t.Fatalf("SendIndexed = %d, %v; want %d", idx, err, want)
		}
		if got := <-sent; got != want {
			t.Fatalf("sent under %d, want %d", got, want)
		}
	}
	if err := tun.Resend(1, msg); err != nil || <-sent != 1 || tun.NextIndex() != 3 {
		t.Fatalf("Resend(1): %v; next %d", err, tun.NextIndex())
	}
	tun.Close()

	res, err := na.ResumeRemoteTunnel(rid, gw, tun.RequestID(), 3)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Close()
	if o := <-local.opened; o.gw != gw || o.req != tun.RequestID() || o.next != 3 {
		t.Fatalf("resumed as %+v, want the same request from 3", o)
	}
	if idx, err := res.SendIndexed(msg); err != nil || idx != 3 || <-sent != 3 {
		t.Fatalf("after the resume: SendIndexed = %d, %v", idx, err)
	}
}

type fullLocal struct{ *fakeLocal }

func (l fullLocal) OpenTunnel(actor.Host, proto.GatewayID, *proto.RequestID, uint16) (guard.ResumableTunnel, error) {
	return nil, rerr.GuardHostOverloaded(7)
}

// A host that carries the most tunnels it may on the node holding its socket refuses a
// relayed tunnel with guard.host_overloaded, which reaches the gateway's node as that error
// (not retried as a missing socket).
func TestRelayedTunnelOfAFullHost(t *testing.T) {
	db, bus := openStore(t), pubsub.NewMemory()
	t.Cleanup(func() { _ = bus.Close() })
	h := actor.RunnerHost(id.New(1))
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	local := fullLocal{newFakeLocal(h)}
	nb := New(Options{DB: db, Bus: bus, ID: "b", Label: 1, Lease: 3 * time.Second, Releases: 8, Local: local, Changes: local})
	handler = nb.RelayHandler()
	if err := nb.Start(context.Background(), srv.URL); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nb.Stop)
	if _, err := nb.ClaimSocket(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	na := startNode(t, db, bus, "a", 8, newFakeLocal())
	_, err := na.OpenRemoteTunnel(h, proto.GatewayID{})
	if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeGuardHostOverloaded) || errors.Is(err, ErrNoSocket) || e.Metadata["max"] == nil {
		t.Fatalf("relay to a full host: %v, want guard.host_overloaded", err)
	}
}
