package apihttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

func dcs(n int) []Datacenter {
	out := make([]Datacenter, n)
	for i := range out {
		out[i] = Datacenter{Name: fmt.Sprintf("dc%d", i), Label: uint16(i + 1)}
	}
	return out
}

func TestFanOutOrderAndParallelism(t *testing.T) {
	var inflight, peak atomic.Int32
	full := make(chan struct{})
	var once sync.Once
	res := FanOut(context.Background(), dcs(40), time.Minute, func(ctx context.Context, dc Datacenter) (string, error) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		if n == FanOutParallelism {
			once.Do(func() { close(full) })
		}
		select { // the first 16 wait until all 16 run at once
		case <-full:
		case <-ctx.Done():
			return "", ctx.Err()
		}
		return "from " + dc.Name, nil
	})
	if got := peak.Load(); got != FanOutParallelism {
		t.Errorf("peak parallelism %d, want %d", got, FanOutParallelism)
	}
	for i, r := range res {
		if r.Err != nil || r.Value != "from dc"+fmt.Sprint(i) || r.Datacenter.Name != "dc"+fmt.Sprint(i) {
			t.Errorf("result %d = %+v", i, r)
		}
	}
}

func TestFanOutHungPeer(t *testing.T) {
	ok := peerServer(t, "")
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hung.Close()
	defer close(release)

	p := NewPeerClient(PeerOptions{Timeout: time.Minute}) // the fan-out's timeout is the shorter
	defer p.Close()
	topo := []Datacenter{
		{Name: "good", Label: 1, PeerURL: ok.URL},
		{Name: "stuck", Label: 2, PeerURL: hung.URL},
	}
	res := FanOut(context.Background(), topo, 300*time.Millisecond, func(ctx context.Context, dc Datacenter) (map[string]any, error) {
		var out map[string]any
		err := p.Get(ctx, dc, "/things", nil, &out)
		return out, err
	})
	if res[0].Err != nil || res[0].Value["limit"] != float64(100) {
		t.Errorf("good datacenter: %+v", res[0])
	}
	e, isR := rerr.As(res[1].Err)
	if !isR || !rerr.Is(e, rerr.CodeDatacenterUnreachable) || e.Metadata["datacenter"] != "stuck" ||
		!strings.Contains(res[1].Err.Error(), "no answer within ") { // the budget left when the request started
		t.Errorf("hung datacenter: %v", res[1].Err)
	}
	got, err := Succeeded(context.Background(), res)
	if err != nil || len(got) != 1 || got[0].Datacenter.Name != "good" {
		t.Errorf("Succeeded = %v, %v", got, err)
	}
	if FirstError(res) != res[1].Err {
		t.Errorf("FirstError = %v", FirstError(res))
	}
}

func TestFanOutErrors(t *testing.T) {
	ctx := context.Background()
	// A function that ignores rerr and returns a bare context error after its time is up.
	res := FanOut(ctx, dcs(3), 50*time.Millisecond, func(ctx context.Context, dc Datacenter) (int, error) {
		switch dc.Name {
		case "dc0":
			<-ctx.Done()
			return 0, ctx.Err()
		case "dc1":
			panic("bug")
		}
		return 0, rerr.NamespaceNotFound("x")
	})
	if e, ok := rerr.As(res[0].Err); !ok || !rerr.Is(e, rerr.CodeDatacenterUnreachable) || e.Metadata["datacenter"] != "dc0" {
		t.Errorf("timed out: %v", res[0].Err)
	}
	if !rerr.Is(res[1].Err, rerr.CodeCoreInternalError) || !strings.Contains(res[1].Err.Error(), "panicked: bug") {
		t.Errorf("panic: %v", res[1].Err)
	}
	// Every datacenter failed: a 4xx answer wins over 5xx failures.
	if _, err := Succeeded(ctx, res); !rerr.Is(err, rerr.CodeNamespaceNotFound) {
		t.Errorf("Succeeded all failed = %v", err)
	}
	if _, err := Succeeded(ctx, res[:1]); !rerr.Is(err, rerr.CodeDatacenterUnreachable) {
		t.Errorf("Succeeded only unreachable = %v", err)
	}
	if got, err := Succeeded[int](ctx, nil); err != nil || len(got) != 0 {
		t.Errorf("Succeeded(nil) = %v, %v", got, err)
	}

	// A cancelled caller: nobody is called.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	var calls atomic.Int32
	res = FanOut(cctx, dcs(5), time.Second, func(ctx context.Context, dc Datacenter) (int, error) {
		calls.Add(1)
		return 1, nil
	})
	if calls.Load() != 0 {
		t.Errorf("%d calls after cancel", calls.Load())
	}
	for _, r := range res {
		if !errors.Is(r.Err, context.Canceled) || !strings.Contains(r.Err.Error(), r.Datacenter.Name) {
			t.Errorf("cancelled: %v", r.Err)
		}
	}
	if res := FanOut(ctx, nil, time.Second, func(context.Context, Datacenter) (int, error) { return 0, nil }); len(res) != 0 {
		t.Errorf("no datacenters: %v", res)
	}
}
