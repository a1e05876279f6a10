package hostsock_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/ops/actor"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

// The envoy v8 windows: a streamed request body reaches the envoy in frames of at most
// 64 KiB, never more than 1 MiB ahead of what the envoy said it consumed; the envoy's
// cancel stops it. A streamed response's consumption goes back to the envoy as cumulative
// window updates.
func TestEnvoyTunnelFlowControl(t *testing.T) {
	e := startEnvoys(t, hostsocktest.Config{})
	s, _ := connectEnvoy(t, e, e.hs, "envoy-1")
	s.c.SetReadLimit(1 << 20)
	tun, err := e.node.Registry.OpenTunnel(actor.EnvoyHost(e.ns, "envoy-1"), e.node.Registry.GatewayID(), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tun.Close()
	if err := tun.Send(rp.ToClientRequestStart{ActorID: "a", Method: "POST", Path: "/up", Stream: true}); err != nil {
		t.Fatal(err)
	}
	m := nextEnvoy[proto.ToEnvoyTunnelMessage](s)
	if st, ok := m.MessageKind.(proto.ToEnvoyRequestStart); !ok || !st.Stream || !st.ResponseStream {
		t.Fatalf("start %+v", m.MessageKind)
	}
	id := m.MessageID

	// The gateway side sends 3 MiB in chunks of 256 KiB, then 1 MiB more that the envoy
	// cancels.
	body := make([]byte, 3<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	sent := make(chan error, 1)
	go func() {
		for off := 0; off < len(body); off += 256 << 10 {
			if err := tun.Send(rp.ToClientRequestChunk{Body: body[off : off+256<<10], Finish: off+256<<10 == len(body)}); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	var got []byte
	var acked uint64
	frames := 0
	for {
		c := nextEnvoy[proto.ToEnvoyTunnelMessage](s)
		chunk, ok := c.MessageKind.(proto.ToEnvoyRequestChunk)
		if !ok {
			t.Fatalf("got %+v, want a request chunk", c.MessageKind)
		}
		frames++
		got = append(got, chunk.Body...)
		if len(chunk.Body) > core.BodyChunk {
			t.Fatalf("frame of %d bytes", len(chunk.Body))
		}
		if uint64(len(got))-acked > 1<<20 {
			t.Fatalf("%d bytes received, %d acknowledged: past the 1 MiB window", len(got), acked)
		}
		// Credit comes back late, a quarter of the window at a time.
		if uint64(len(got))-acked >= 768<<10 {
			acked = uint64(len(got)) - 256<<10
			s.send(proto.ToRivetTunnelMessage{MessageID: id, MessageKind: proto.ToRivetRequestBodyWindowUpdate{ConsumedBytes: acked}})
		}
		if chunk.Finish {
			break
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) || frames != len(body)/core.BodyChunk {
		t.Fatalf("%d bytes in %d frames", len(got), frames)
	}

	// The envoy cancels the body: a chunk waiting for credit, and any later one, fails
	// with core.ErrRequestBodyCancelled.
	s.send(proto.ToRivetTunnelMessage{MessageID: id, MessageKind: proto.ToRivetRequestBodyCancel{}})
	s.send(proto.ToRivetTunnelMessage{MessageID: id, MessageKind: proto.ToRivetResponseStart{Status: 200, Stream: true}})
	if r, err := tun.Recv(context.Background()); err != nil || !r.(rp.ToServerResponseStart).Stream {
		t.Fatalf("response start %+v %v", r, err)
	}
	if err := tun.Send(rp.ToClientRequestChunk{Body: []byte("more")}); err != core.ErrRequestBodyCancelled {
		t.Fatalf("chunk after the cancel: %v", err)
	}

	// Response consumption: an update every 256 KiB, cumulative.
	for range 9 {
		if err := tun.(guard.ResponseBodyConsumer).ConsumedResponseBody(64 << 10); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []uint64{256 << 10, 512 << 10} {
		u := nextEnvoy[proto.ToEnvoyTunnelMessage](s)
		if w, ok := u.MessageKind.(proto.ToEnvoyResponseBodyWindowUpdate); !ok || w.ConsumedBytes != want {
			t.Fatalf("got %+v, want a window update of %d", u.MessageKind, want)
		}
	}
	// A client gone: the abort reaches the envoy as cancelled.
	if err := tun.Send(rp.ToClientRequestAbort{}); err != nil {
		t.Fatal(err)
	}
	a := nextEnvoy[proto.ToEnvoyTunnelMessage](s)
	if ab, ok := a.MessageKind.(proto.ToEnvoyRequestAbort); !ok || ab.Reason.Kind != proto.HttpStreamAbortCancelled {
		t.Fatalf("got %+v, want a cancelled abort", a.MessageKind)
	}
}
