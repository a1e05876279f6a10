package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"testing"

	"github.com/berthhq/berth/tests/internal/harness"
)

// Large bodies with the npm runner (protocol v7): runner 2.2.1 drops the response of a
// streamed request, so the gateway sends it the body whole, up to 20 MiB, with or without a
// Content-Length (past the 1 MiB at which envoys get it streamed); a 15 MiB response comes
// back whole; a 50 MiB body is 413.
func TestLargeBodiesWithRunner(t *testing.T) {
	e := startEngine(t)
	r := startRunner(t, e, "echo")
	a := e.createActor("echo", "upload")
	r.await("actorStart", func(ev event) bool { return ev.ActorID == a.ActorID })

	const size = 15 << 20
	want := harness.PatternSHA256(size)
	for _, tc := range []struct {
		name   string
		length int64
	}{{"content-length", size}, {"chunked", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", e.url+"/", io.NopCloser(harness.Pattern(size)))
			req.ContentLength = tc.length
			setTarget(req, "/gateway/"+a.ActorID+"/upload")
			resp, b := e.do(req)
			var got struct {
				Bytes  int64  `json:"bytes"`
				SHA256 string `json:"sha256"`
			}
			if err := json.Unmarshal(b, &got); err != nil || resp.StatusCode != 200 {
				t.Fatalf("%d %s (%v)", resp.StatusCode, b, err)
			}
			if got.Bytes != size || got.SHA256 != want {
				t.Fatalf("actor read %d bytes, sha256 %s; want %d, %s", got.Bytes, got.SHA256, size, want)
			}
		})
	}
	// A large response: runner 2.2.1 sends it whole (it never streams; its limit is 20 MiB).
	req, _ := http.NewRequest("GET", e.url+"/", nil)
	setTarget(req, "/gateway/"+a.ActorID+"/download?mb=15")
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || n != size || hex.EncodeToString(h.Sum(nil)) != want {
		t.Fatalf("download: %d, %d bytes, %v", resp.StatusCode, n, err)
	}

	req, _ = http.NewRequest("POST", e.url+"/", io.NopCloser(harness.Pattern(50<<20)))
	req.ContentLength = -1
	setTarget(req, "/gateway/"+a.ActorID+"/upload")
	if resp, b := e.do(req); resp.StatusCode != 413 || resp.Header.Get("X-Rivet-Error") != "guard.invalid_request_body" {
		t.Fatalf("50 MiB: %d %s", resp.StatusCode, b)
	}
}
