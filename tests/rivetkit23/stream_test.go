package rivetkit23

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

// rivetkit 2.3.19's own envoy with a raw-HTTP actor (onRequest): a 50 MiB upload streams to
// it (ToEnvoyRequestStart{stream}, chunks under its 1 MiB window, which it returns as its
// handler reads) and arrives intact in many pieces; a 50 MiB response it streams (a
// ReadableStream body) reaches the client intact under the window the gateway returns.
func TestRivetkit23StreamedBodies(t *testing.T) {
	needRivetkit23(t)
	e := harness.NewEngine(t, harness.Settings{}, "mem://")
	e.Start()
	startApp(t, e, "rivetkit")
	if got := call(t, e, "streamer", "s1", "ping"); got != true {
		t.Fatalf("ping %v", got)
	}
	q := url.Values{"rvt-namespace": {"default"}, "rvt-method": {"get"}, "rvt-key": {"s1"}}
	const size = 50 << 20
	sum := func(r io.Reader) (string, int64) {
		h := sha256.New()
		n, _ := io.Copy(h, r)
		return hex.EncodeToString(h.Sum(nil)), n
	}
	want, _ := sum(harness.Pattern(size))

	req, _ := http.NewRequest("POST", fmt.Sprintf("%s/gateway/streamer/request/upload?%s", e.URL, q.Encode()), io.NopCloser(harness.Pattern(size)))
	req.ContentLength = -1
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	var up struct {
		Chunks int    `json:"chunks"`
		Bytes  int64  `json:"bytes"`
		SHA256 string `json:"sha256"`
	}
	if err := json.Unmarshal(b, &up); err != nil || res.StatusCode != 200 {
		t.Fatalf("upload: %d %s", res.StatusCode, b)
	}
	if up.Bytes != size || up.SHA256 != want || up.Chunks < 50 {
		t.Fatalf("upload: the actor read %+v", up)
	}

	res, err = client.Get(fmt.Sprintf("%s/gateway/streamer/request/download?mb=50&%s", e.URL, q.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	got, n := sum(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || n != size || got != want {
		t.Fatalf("download: %d, %d bytes", res.StatusCode, n)
	}
}
