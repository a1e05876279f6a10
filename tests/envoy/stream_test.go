package envoy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	proto "github.com/berthhq/berth/sdk/protocol/envoy"
	"github.com/berthhq/berth/tests/internal/harness"
)

const bigBody = 50 << 20

// steadyPings keep the fast ping interval but allow 15 s for a pong: a socket carrying 50 MiB
// answers its pings behind the body's frames, later than the fast 1 s threshold on a busy
// machine (the envoy then expired mid-download in CI).
var steadyPings = []string{
	"BERTH__pegboard__envoy_ping_timeout=15000",
	"BERTH__pegboard__envoy_lost_threshold=15000",
	"BERTH__pegboard__envoy_eligible_threshold=15000",
}

// A 50 MiB upload, with and without Content-Length, reaches an SDK envoy's actor streamed:
// read in pieces of at most 64 KiB (the engine's frames), intact. The SDK returns the
// engine's credit as its handler reads, or the upload would stop after 2 MiB (the 1 MiB kept
// for retries and the 1 MiB window).
func TestEnvoyStreamedUpload(t *testing.T) {
	e := startEngine(t, map[string]any{}, steadyPings...)
	startEnvoy(t, e, "envoy-up")
	aid := createActor(t, e, "up")
	want := harness.PatternSHA256(bigBody)
	for _, length := range []int64{bigBody, -1} {
		req, _ := http.NewRequest("POST", e.URL+"/gateway/"+aid+"/upload", io.NopCloser(harness.Pattern(bigBody)))
		req.ContentLength = length
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got struct {
			Reads, Bytes, Largest int
			SHA256                string
		}
		if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 {
			t.Fatalf("length %d: %d %s", length, resp.StatusCode, b)
		}
		if got.Bytes != bigBody || got.SHA256 != want || got.Largest > 64<<10 || got.Reads < bigBody/(64<<10) {
			t.Fatalf("length %d: the actor read %+v", length, got)
		}
	}
}

// An SDK envoy's actor that flushes streams a 50 MiB response: chunked within the 1 MiB
// window the gateway returns as the client reads, intact at the client.
func TestEnvoySDKStreamedDownload(t *testing.T) {
	e := startEngine(t, map[string]any{}, steadyPings...)
	startEnvoy(t, e, "envoy-down")
	aid := createActor(t, e, "sdk-down")
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(e.URL + "/gateway/" + aid + "/download?mb=50")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	if err != nil || resp.StatusCode != 200 || n != bigBody || hex.EncodeToString(h.Sum(nil)) != harness.PatternSHA256(bigBody) {
		t.Fatalf("download: %d, %d bytes, %v", resp.StatusCode, n, err)
	}
	if resp.ContentLength != -1 {
		t.Fatalf("content-length %d: the response was not streamed", resp.ContentLength)
	}
}

// A raw envoy streams a 50 MiB response under the 1 MiB window: the gateway returns the
// client's consumption in cumulative window updates (never past what was sent), the envoy
// never has more than 1 MiB unacknowledged, and the client gets the body intact. Then a
// client that goes away in the middle of a streamed response, and one in the middle of a
// streamed upload, get the envoy a cancelled ToEnvoyRequestAbort.
func TestEnvoyStreamedDownloadAndCancel(t *testing.T) {
	e := startEngine(t, map[string]any{}, steadyPings...)
	raw := startRaw(t, e, "envoy-raw")
	aid := createActor(t, e, "down")
	raw.command(t)

	type result struct {
		status int
		sum    string
		n      int64
		err    error
	}
	client := &http.Client{Timeout: 60 * time.Second}
	got := make(chan result, 1)
	go func() {
		resp, err := client.Get(e.URL + "/gateway/" + aid + "/download")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		h := sha256.New()
		n, err := io.Copy(h, resp.Body)
		got <- result{status: resp.StatusCode, sum: hex.EncodeToString(h.Sum(nil)), n: n, err: err}
	}()
	start := raw.recvTunnel(t)
	if st, ok := start.MessageKind.(proto.ToEnvoyRequestStart); !ok || st.Stream || !st.ResponseStream || st.Path != "/download" {
		t.Fatalf("start %+v", start.MessageKind)
	}
	id := start.MessageID
	reply := func(idx uint16, k proto.ToRivetTunnelMessageKind) {
		raw.write(proto.ToRivetTunnelMessage{MessageID: proto.MessageID{GatewayID: id.GatewayID, RequestID: id.RequestID, MessageIndex: idx}, MessageKind: k})
	}
	reply(0, proto.ToRivetResponseStart{Status: 200, Stream: true, Headers: []proto.Header{{Name: "content-type", Value: "application/octet-stream"}}})
	src := harness.Pattern(bigBody)
	var sent, acked uint64
	updates := 0
	buf := make([]byte, 64<<10)
	for idx := uint16(1); ; idx++ {
		for sent-acked+uint64(len(buf)) > 1<<20 { // no credit: wait for the gateway's
			m := raw.recvTunnel(t)
			u, ok := m.MessageKind.(proto.ToEnvoyResponseBodyWindowUpdate)
			if !ok || u.ConsumedBytes <= acked || u.ConsumedBytes > sent {
				t.Fatalf("got %+v (sent %d, acknowledged %d), want a window update", m.MessageKind, sent, acked)
			}
			acked = u.ConsumedBytes
			updates++
		}
		n, _ := src.Read(buf)
		sent += uint64(n)
		last := sent == bigBody
		reply(idx, proto.ToRivetResponseChunk{Body: buf[:n], Finish: last})
		if last {
			break
		}
	}
	r := <-got
	if r.err != nil || r.status != 200 || r.n != bigBody || r.sum != harness.PatternSHA256(bigBody) {
		t.Fatalf("client got %d, %d bytes, %v", r.status, r.n, r.err)
	}
	if updates < (bigBody-1<<20)/(256<<10) {
		t.Fatalf("%d window updates for %d bytes", updates, bigBody)
	}

	// A client gone during a streamed response.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	read := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "GET", e.URL+"/gateway/"+aid+"/download", nil)
		resp, err := client.Do(req)
		if err != nil {
			close(read)
			return
		}
		defer resp.Body.Close()
		_, _ = io.ReadFull(resp.Body, make([]byte, 1000))
		close(read)
		<-ctx.Done()
	}()
	start = raw.nextStart(t)
	id = start.MessageID
	reply(0, proto.ToRivetResponseStart{Status: 200, Stream: true})
	reply(1, proto.ToRivetResponseChunk{Body: buf[:1000]})
	<-read
	cancel()
	<-done
	raw.awaitAbort(t, id)

	// A client gone during a streamed upload, past the 1 MiB the gateway keeps.
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", e.URL+"/gateway/"+aid+"/upload", pr)
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	go func() { _, _ = io.Copy(pw, harness.Pattern(bigBody)) }()
	start = raw.nextStart(t)
	if st, ok := start.MessageKind.(proto.ToEnvoyRequestStart); !ok || !st.Stream {
		t.Fatalf("upload start %+v", start.MessageKind)
	}
	id = start.MessageID
	// The envoy reads on and returns credit; once 3 MiB came the client goes away. The
	// gateway learns it at its next read of the client's body, and aborts.
	var received uint64
	acked = 0
	for {
		m := raw.recvTunnel(t)
		if m.MessageID.RequestID != id.RequestID {
			continue
		}
		switch k := m.MessageKind.(type) {
		case proto.ToEnvoyRequestChunk:
			received += uint64(len(k.Body))
			if received-acked >= 256<<10 {
				acked = received
				reply(0, proto.ToRivetRequestBodyWindowUpdate{ConsumedBytes: acked})
			}
			if received >= 3<<20 && ctx.Err() == nil {
				cancel()
				pw.CloseWithError(context.Canceled)
			}
		case proto.ToEnvoyRequestAbort:
			if k.Reason.Kind != proto.HttpStreamAbortCancelled || ctx.Err() == nil {
				t.Fatalf("abort %+v after %d bytes", k, received)
			}
			return
		default:
			t.Fatalf("got %+v during the upload", m.MessageKind)
		}
	}
}

// recvTunnel returns the next gateway message to the raw envoy.
func (r *rawEnvoy) recvTunnel(t *testing.T) proto.ToEnvoyTunnelMessage {
	t.Helper()
	select {
	case m := <-r.tunnel:
		return m
	case <-time.After(20 * time.Second):
		t.Fatal("no tunnel message")
	}
	return proto.ToEnvoyTunnelMessage{}
}

// nextStart skips the earlier requests' messages (late window updates) to the next request
// start.
func (r *rawEnvoy) nextStart(t *testing.T) proto.ToEnvoyTunnelMessage {
	t.Helper()
	for {
		m := r.recvTunnel(t)
		if _, ok := m.MessageKind.(proto.ToEnvoyRequestStart); ok {
			return m
		}
	}
}

// awaitAbort reads the request's messages until its cancelled abort.
func (r *rawEnvoy) awaitAbort(t *testing.T, id proto.MessageID) {
	t.Helper()
	for {
		m := r.recvTunnel(t)
		if m.MessageID.RequestID != id.RequestID {
			continue
		}
		if a, ok := m.MessageKind.(proto.ToEnvoyRequestAbort); ok {
			if a.Reason.Kind != proto.HttpStreamAbortCancelled {
				t.Fatalf("abort %+v", a)
			}
			return
		}
	}
}
