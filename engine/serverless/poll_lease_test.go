package serverless

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Two nodes polling the same store: only the holder of a pool's poll lease fetches its
// /metadata, once per interval; when it stops (releasing the lease) the other takes over.
func TestPollLeaseOneNodeAtATime(t *testing.T) {
	type call struct {
		agent string
		at    time.Time
	}
	calls := make(chan call, 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls <- call{r.UserAgent(), time.Now()}
		io.WriteString(w, envoyMeta)
	}))
	t.Cleanup(srv.Close)
	db, _ := storeWith(t, srv.URL+"/api/rivet", `,"metadata_poll_interval":5000`)
	run := func(node string) (stop func()) {
		f := fetcher(loopback)
		f.UserAgent = node
		s := New(db, f, slog.New(slog.DiscardHandler))
		s.NodeID = node
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { s.Run(ctx); close(done) }()
		return func() { cancel(); <-done }
	}
	stopA := run("a")
	first := <-calls // a takes the lease at its first poll
	stopB := run("b")
	defer stopB()
	prev := first
	for range 2 {
		c := <-calls
		if c.agent != first.agent || c.at.Sub(prev.at) < MinPollInterval*9/10 {
			t.Fatalf("poll by %s %v after the previous one by %s, want only %s, once per %v", c.agent, c.at.Sub(prev.at), prev.agent, first.agent, MinPollInterval)
		}
		prev = c
	}
	stopA() // releases the lease: b polls next
	if c := <-calls; c.agent != "b" {
		t.Fatalf("after a stopped, a poll by %s, want b", c.agent)
	}
}
