package security

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
	"github.com/berthhq/berth/tests/proc"
)

// startLimited starts an engine whose guard section gets guard (over the defaults) and whose
// garbage collector runs without berth's heap floor, so that its RSS follows what it holds.
func startLimited(t *testing.T, guard map[string]any) *harness.Engine {
	t.Helper()
	return harness.StartEngine(t, harness.Settings{Configure: func(cfg map[string]any) {
		g := cfg["guard"].(map[string]any)
		for k, v := range guard {
			g[k] = v
		}
		cfg["node"] = map[string]any{"gc_heap_floor_mib": 0}
	}})
}

// sampleRSS samples the engine's RSS every 10 ms until the returned function is called,
// which returns the highest seen.
func sampleRSS(e *harness.Engine) (stop func() int64) {
	var peak int64
	done, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			peak = max(peak, rss(e))
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond): // sampling interval
			}
		}
	}()
	return func() int64 {
		close(done)
		<-sampled
		return peak
	}
}

// hostPort is the engine's guard address.
func hostPort(e *harness.Engine) string {
	return strings.TrimPrefix(strings.TrimPrefix(e.URL, "http://"), "https://")
}

// answer is one raw exchange's response, or the error that ended it.
type answer struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// errorKey is "group.code" when the body is an engine JSON error ({group, code, message}),
// else "".
func (a answer) errorKey() string {
	var e struct{ Group, Code, Message *string }
	if json.Unmarshal(a.body, &e) != nil || e.Group == nil || e.Code == nil || e.Message == nil {
		return ""
	}
	return *e.Group + "." + *e.Code
}

func (a answer) String() string {
	if a.err != nil {
		return "no answer: " + a.err.Error()
	}
	return fmt.Sprintf("%d %.200s", a.status, a.body)
}

// exchange sends raw on a new connection to addr, writing while it reads (the engine may
// answer before the client is done sending), and reads one response.
func exchange(addr, raw string) answer {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return answer{err: err}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(soon))
	go func() { _, _ = io.WriteString(c, raw) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return answer{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

// healthy fails the test unless the engine process runs and answers /health.
func healthy(t *testing.T, e *harness.Engine) {
	t.Helper()
	if a := exchange(hostPort(e), "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); a.err != nil || a.status != 200 {
		t.Fatalf("the engine does not answer /health: %v", a)
	}
}

// mib is a byte count in MiB, for figures.
func mib(b int64) float64 { return float64(b) / (1 << 20) }

// rss is the engine's resident memory.
func rss(e *harness.Engine) int64 { return proc.RSS(e.PID()) }

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not seen within %v", what, within)
		}
		time.Sleep(20 * time.Millisecond) // polling an observed state
	}
}
