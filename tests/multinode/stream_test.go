package multinode

import (
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// zeros yields n zero bytes without holding them.
type zeros struct{ n int64 }

func (z *zeros) Read(b []byte) (int, error) {
	if z.n <= 0 {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), z.n)]
	clear(b)
	z.n -= int64(len(b))
	return len(b), nil
}

// A request body above 1 MiB streams to an envoy's actor through every node, and a streamed
// response comes back: relayed to the node holding the envoy's socket when it is another,
// with the windows' credit crossing the relay both ways, or either would stop after 1-2 MiB.
func TestStreamedBodiesThroughEveryNode(t *testing.T) {
	c := startCluster(t, 3, 0, 0)
	c.addEnvoys(t, 3, 3)
	hc := &http.Client{Timeout: 60 * time.Second}
	const size = 8 << 20
	for _, aid := range c.actors {
		for _, n := range c.nodes {
			req, _ := http.NewRequest(http.MethodPut, n.url+"/gateway/"+aid+"/upload", io.NopCloser(&zeros{n: size}))
			req.ContentLength = -1
			resp, err := hc.Do(req)
			if err != nil {
				t.Fatalf("actor %s through node %s: %v", aid, n.id, err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got, _ := strconv.Atoi(string(b)); resp.StatusCode != http.StatusOK || got != size {
				t.Fatalf("actor %s through node %s: %d %s, want %d bytes read", aid, n.id, resp.StatusCode, b, size)
			}
			// A streamed response back: past the 1 MiB window only if the client's
			// consumption crosses the relay to the envoy's node.
			resp, err = hc.Get(n.url + "/gateway/" + aid + "/download?mb=8")
			if err != nil {
				t.Fatalf("download from actor %s through node %s: %v", aid, n.id, err)
			}
			got, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || got != size {
				t.Fatalf("download from actor %s through node %s: %d, %d bytes, %v", aid, n.id, resp.StatusCode, got, err)
			}
		}
	}
}
