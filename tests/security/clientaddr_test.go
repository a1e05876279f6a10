package security

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/tests/internal/harness"
)

// A client rotating X-Forwarded-For from an untrusted address stays one client: with
// guard.rate_limit_requests at 5, 1000 gateway requests, each naming another address, get
// 5 answers and 995 × 429 guard.rate_limit. Behind a trusted proxy the header names the
// client, and the same rotation passes (each address is a client of its own).
func TestRotatingForwardedFor(t *testing.T) {
	const n = 1000
	run := func(t *testing.T, trusted []string) map[string]int {
		e := harness.StartEngine(t, harness.Settings{Configure: func(cfg map[string]any) {
			g := cfg["guard"].(map[string]any)
			g["rate_limit_requests"] = 5
			g["trusted_proxies"] = trusted
		}})
		hc := &http.Client{Transport: &http.Transport{}}
		defer hc.CloseIdleConnections()
		got := map[string]int{}
		actor := id.New(1).String() // no such actor: 404 actor.not_found when not limited
		for i := range n {
			req, _ := http.NewRequest(http.MethodGet, e.URL+"/gateway/"+actor+"/", nil)
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", i/256, i%256))
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got[fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("X-Rivet-Error"))]++
		}
		return got
	}
	untrusted := run(t, []string{})
	limited := untrusted["429 guard.rate_limit"]
	if limited != n-5 || untrusted["404 actor.not_found"] != 5 {
		t.Errorf("%d requests rotating X-Forwarded-For from an untrusted peer: %v; want 5 × 404 and %d × 429", n, untrusted, n-5)
	}
	t.Logf("figure: rotating X-Forwarded-For, untrusted peer: %d attempts, %d limited, %d bypasses", n, limited, n-5-limited)
	if behind := run(t, []string{"127.0.0.1"}); behind["404 actor.not_found"] != n {
		t.Errorf("%d clients behind a trusted proxy: %v, want %d × 404", n, behind, n)
	}
}
