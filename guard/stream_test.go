package guard

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/berthhq/berth/guard/core"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// streamHost is a host whose tunnels record what the gateway sends and answer with answer
// once the request (and its streamed body) is complete, or once a tunnel carried staleAfter
// chunks when staleAfter > 0.
type streamHost struct {
	mu         sync.Mutex
	opens      int
	starts     []proto.ToClientRequestStart
	chunks     [][]byte
	finished   bool
	aborts     int
	consumed   int
	staleAfter int
	answer     []proto.ToServerTunnelMessageKind
}

func (h *streamHost) OpenTunnel(actor.Host) (Tunnel, error) {
	h.mu.Lock()
	h.opens++
	h.mu.Unlock()
	return &streamTunnel{h: h, out: make(chan proto.ToServerTunnelMessageKind, 64), closed: make(chan struct{})}, nil
}

// streamTunnel: once it answered a streamed request, later chunks wait for Close.
type streamTunnel struct {
	h         *streamHost
	out       chan proto.ToServerTunnelMessageKind
	closed    chan struct{}
	closeOnce sync.Once
	answered  bool
	chunks    int // sent on this tunnel
}

func (t *streamTunnel) Send(m proto.ToClientTunnelMessageKind) error {
	if _, ok := m.(proto.ToClientRequestChunk); ok && t.answered {
		<-t.closed
		return errors.New("tunnel closed")
	}
	h := t.h
	h.mu.Lock()
	defer h.mu.Unlock()
	answer := false
	switch m := m.(type) {
	case proto.ToClientRequestStart:
		h.starts = append(h.starts, m)
		answer = !m.Stream
	case proto.ToClientRequestChunk:
		h.chunks = append(h.chunks, m.Body)
		h.finished = m.Finish
		t.chunks++
		answer = m.Finish || (h.staleAfter > 0 && t.chunks == h.staleAfter)
	case proto.ToClientRequestAbort:
		h.aborts++
	}
	if answer {
		t.answered = true
		for _, a := range h.answer {
			t.out <- a
		}
	}
	return nil
}

func (t *streamTunnel) Recv(ctx context.Context) (proto.ToServerTunnelMessageKind, error) {
	select {
	case m := <-t.out:
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *streamTunnel) Close() { t.closeOnce.Do(func() { close(t.closed) }) }

func (t *streamTunnel) ConsumedResponseBody(n int) error {
	t.h.mu.Lock()
	t.h.consumed += n
	t.h.mu.Unlock()
	return nil
}

// onlyReader hides a reader's length, so that the request has no Content-Length.
type onlyReader struct{ io.Reader }

// streamFixture serves an actor hosted on an envoy whose tunnels are h's.
func streamFixture(t *testing.T, h *streamHost) (*fixture, string) {
	f := newFixture(t, Options{StreamBody: 100 << 10})
	f.gw.o.Hosts = hostsOf{h.OpenTunnel}
	aid := id.New(1)
	key := "envoy-1"
	err := udb.Update(context.Background(), f.db, func(tx udb.Transaction) error {
		keys.Set(tx, keys.ActorStateKey{ActorID: aid}, keys.ActorState{V: keys.ActorStateVersion, Phase: keys.PhaseRunning, EnvoyKey: &key,
			Namespace: id.New(1), Name: "echo", Selector: "pool", CrashPolicy: actor.CrashSleep})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return f, "/gateway/" + aid.String() + "/up"
}

// A runner gets a large body whole, up to MaxBody (runner 2.2.1 cannot take it streamed).
func TestRunnerGetsWholeBody(t *testing.T) {
	h := &streamHost{answer: []proto.ToServerTunnelMessageKind{proto.ToServerResponseStart{Status: 200}}}
	f := newFixture(t, Options{StreamBody: 100 << 10, MaxBody: 300 << 10})
	f.gw.o.Hosts = hostsOf{h.OpenTunnel}
	aid, rid := id.New(1), id.New(1)
	f.place(t, aid, keys.PhaseRunning, &rid)
	body := bytes.Repeat([]byte("r"), 300<<10)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("POST", "/gateway/"+aid.String()+"/x", onlyReader{bytes.NewReader(body)}))
	if w.Code != 200 || len(h.starts) != 1 || h.starts[0].Stream || !bytes.Equal(h.starts[0].Body, body) || len(h.chunks) != 0 {
		t.Fatalf("%d, starts %d, chunks %d", w.Code, len(h.starts), len(h.chunks))
	}
	w = httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("POST", "/gateway/"+aid.String()+"/x", onlyReader{bytes.NewReader(append(body, 'x'))}))
	if w.Code != 413 || errKey(w) != "guard.invalid_request_body" {
		t.Fatalf("over MaxBody: %d %q", w.Code, errKey(w))
	}
}

// A body above StreamBody goes as a streamed start and chunks of at most core.BodyChunk,
// the last with finish; a smaller one goes whole in the start, with or without a length.
func TestStreamedRequestBody(t *testing.T) {
	ok := []proto.ToServerTunnelMessageKind{proto.ToServerResponseStart{Status: 200, Body: []byte("ok")}}
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for _, tc := range []struct {
		name   string
		r      io.Reader
		stream bool
	}{
		{"length", bytes.NewReader(body), true},
		{"no length", onlyReader{bytes.NewReader(body)}, true},
		{"small no length", onlyReader{bytes.NewReader(body[:1000])}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &streamHost{answer: ok}
			f, target := streamFixture(t, h)
			req := httptest.NewRequest("POST", target, tc.r)
			w := httptest.NewRecorder()
			f.h.ServeHTTP(w, req)
			if w.Code != 200 || w.Body.String() != "ok" {
				t.Fatalf("response %d %q", w.Code, w.Body)
			}
			if len(h.starts) != 1 || h.starts[0].Stream != tc.stream {
				t.Fatalf("starts %+v", h.starts)
			}
			if !tc.stream {
				if len(h.chunks) != 0 || len(h.starts[0].Body) != 1000 {
					t.Fatalf("small body: %d chunks, %d bytes in the start", len(h.chunks), len(h.starts[0].Body))
				}
				return
			}
			if h.starts[0].Body != nil || !h.finished {
				t.Fatalf("start body %d bytes, finished %v", len(h.starts[0].Body), h.finished)
			}
			var got []byte
			for _, c := range h.chunks {
				if len(c) > core.BodyChunk {
					t.Fatalf("chunk of %d bytes", len(c))
				}
				got = append(got, c...)
			}
			if !bytes.Equal(got, body) || len(h.chunks) < len(body)/core.BodyChunk {
				t.Fatalf("%d bytes in %d chunks", len(got), len(h.chunks))
			}
		})
	}
}

// A streamed request is retried while only its kept prefix was sent, and not once the body
// was read past it: then the stale route's answer ends the request (503).
func TestStreamedRequestRetry(t *testing.T) {
	stale := []proto.ToServerTunnelMessageKind{proto.ToServerResponseStart{Status: 503,
		Headers: []proto.Header{{Name: "x-rivet-error", Value: "runner.actor_not_found"}}}}
	body := bytes.Repeat([]byte("x"), 1<<20)

	h := &streamHost{answer: stale, staleAfter: 20}
	f, target := streamFixture(t, h)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("POST", target, bytes.NewReader(body)))
	if w.Code != 503 || errKey(w) != "guard.service_unavailable" || h.opens != 1 {
		t.Fatalf("past the prefix: %d %q after %d attempts", w.Code, errKey(w), h.opens)
	}

	// Refused at the first chunk, which came from the prefix: retried, every attempt
	// refused, until the attempts run out.
	h = &streamHost{answer: stale, staleAfter: 1}
	f, target = streamFixture(t, h)
	w = httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("POST", target, onlyReader{bytes.NewReader(body[:200<<10])}))
	if w.Code != 502 || errKey(w) != "guard.retry_attempts_exceeded" || h.opens != core.DefaultPolicy.MaxAttempts {
		t.Fatalf("within the prefix: %d %q after %d attempts", w.Code, errKey(w), h.opens)
	}
}

// A streamed response is written chunk by chunk and each chunk reported consumed; an abort
// after the start cuts the client's connection.
func TestStreamedResponse(t *testing.T) {
	var answer []proto.ToServerTunnelMessageKind
	answer = append(answer, proto.ToServerResponseStart{Status: 201, Stream: true,
		Headers: []proto.Header{{Name: "content-type", Value: "application/octet-stream"}}})
	var want []byte
	for i := range 10 {
		c := bytes.Repeat([]byte{byte('a' + i)}, 1000)
		want = append(want, c...)
		answer = append(answer, proto.ToServerResponseChunk{Body: c, Finish: i == 9})
	}
	h := &streamHost{answer: answer}
	f, target := streamFixture(t, h)
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
	if w.Code != 201 || !bytes.Equal(w.Body.Bytes(), want) || w.Header().Get("Content-Type") != "application/octet-stream" || !w.Flushed {
		t.Fatalf("response %d %d bytes flushed %v", w.Code, w.Body.Len(), w.Flushed)
	}
	if h.consumed != len(want) {
		t.Fatalf("consumed %d, want %d", h.consumed, len(want))
	}

	h = &streamHost{answer: []proto.ToServerTunnelMessageKind{answer[0], answer[1], proto.ToServerResponseAbort{}}}
	f, target = streamFixture(t, h)
	w = httptest.NewRecorder()
	func() {
		defer func() {
			if p := recover(); p != http.ErrAbortHandler {
				t.Fatalf("recovered %v, want http.ErrAbortHandler", p)
			}
		}()
		f.h.ServeHTTP(w, httptest.NewRequest("GET", target, nil))
	}()
	if w.Code != 201 || w.Body.Len() != 1000 {
		t.Fatalf("aborted response %d with %d bytes", w.Code, w.Body.Len())
	}
}

// A client that goes away during a streamed response gets the actor an abort.
func TestStreamedResponseClientGone(t *testing.T) {
	h := &streamHost{answer: []proto.ToServerTunnelMessageKind{
		proto.ToServerResponseStart{Status: 200, Stream: true}, proto.ToServerResponseChunk{Body: []byte("first")}}}
	f, target := streamFixture(t, h)
	srv := httptest.NewServer(f.h)
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+target, nil)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 5)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	for i := 0; ; i++ {
		h.mu.Lock()
		n := h.aborts
		h.mu.Unlock()
		if n == 1 {
			break
		}
		if i == 1000 {
			t.Fatal("no abort")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A large body read whole for a runner, then streamed to an envoy on a retry (the actor
// moved), goes whole again.
func TestStreamedBodyAfterWhole(t *testing.T) {
	body := bytes.Repeat([]byte("w"), 300<<10)
	b := &streamedBody{prefix: body[:100<<10+1], rest: bytes.NewReader(body[100<<10+1:])}
	whole, err := b.whole(20 << 20)
	if err != nil || !bytes.Equal(whole, body) || !b.replayable() {
		t.Fatalf("whole: %d bytes, %v, replayable %v", len(whole), err, b.replayable())
	}
	h := &streamHost{}
	tun, _ := h.OpenTunnel(actor.Host{})
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	p := b.pump(ctx, cancel, tun)
	<-p.done
	var got []byte
	for _, c := range h.chunks {
		got = append(got, c...)
	}
	if !bytes.Equal(got, body) || !h.finished {
		t.Fatalf("pumped %d bytes, finished %v", len(got), h.finished)
	}
}
