package multinode

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/tests/internal/harness"
)

// Two nodes of a datacenter poll a serverless pool's /metadata once per interval between
// them, not once each: the poll is the lease holder's (engine/serverless, poll_lease.go).
// After the write's own fetch, every gap between two polls is about the pool's interval (5
// s); two nodes polling on their own would make gaps adding up to one interval.
func TestServerlessMetadataPolledByOneNode(t *testing.T) {
	harness.NeedNode(t)
	c := startCluster(t, 2, 0, 0, "BERTH__pegboard__serverless__allow_private_urls=true")
	fake := harness.StartNode(t, "fake", "serverless-fake.mjs", nil)
	var l struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal([]byte(fake.AwaitEv("listening", 30*time.Second).Line), &l); err != nil || l.URL == "" {
		t.Fatalf("fake: no url (%v)", err)
	}
	body := `{"datacenters":{"default":{"serverless":{"url":"` + l.URL + `","request_lifespan":3600,"metadata_poll_interval":5000}}}}`
	if _, err := c.client.do(http.MethodPut, "/runner-configs/polled?namespace=default", body); err != nil {
		t.Fatal(err)
	}
	isMetadata := func(ev harness.Event) bool {
		return ev.Ev == "request" && strings.Contains(ev.Line, `"path":"/api/rivet/metadata"`)
	}
	fake.Await("the write's fetch", 30*time.Second, isMetadata)
	prev := fake.Await("the first poll", 30*time.Second, isMetadata)
	for i := range 3 {
		ev := fake.Await("a poll", 30*time.Second, isMetadata)
		if gap := time.Duration(ev.Ts-prev.Ts) * time.Millisecond; gap < 4*time.Second {
			t.Errorf("poll %d came %v after the previous one: two nodes polled within one 5 s interval", i+2, gap)
		}
		prev = ev
	}
}
