package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/berthhq/berth/sdk/runner"
)

// countKey is the KV key of the count: 8 bytes, big-endian.
var countKey = []byte("count")

// Counter is an actor that counts. Its count lives in the actor's KV, so it survives sleep
// and moves with the actor to another runner; the copy in memory is a cache of the
// generation that runs. Over HTTP (through the gateway, /gateway/{actor_id}/...):
//
//	GET  /       the count
//	POST /       adds 1 (or ?by=n) and returns the new count
//	POST /sleep  puts the actor to sleep; the next request wakes it
//
// Over a WebSocket, each text message "+" adds 1 and is answered with the new count.
type Counter struct {
	ac *runner.ActorContext

	mu    sync.Mutex // serialises changes: read, add, write to KV
	count int64
}

// Start loads the count. The runner reports the actor running once it returns, so no
// request sees a counter that has not loaded.
func (c *Counter) Start(ctx context.Context, ac *runner.ActorContext) error {
	c.ac = ac
	v, ok, err := ac.KV().Get(ctx, countKey)
	switch {
	case err != nil:
		return fmt.Errorf("counter: load: %w", err)
	case ok && len(v) != 8:
		return fmt.Errorf("counter: stored count has %d bytes, want 8", len(v))
	case ok:
		c.count = int64(binary.BigEndian.Uint64(v))
	}
	ac.Logger().Info("counter: started", "count", c.count, "generation", ac.Generation())
	return nil
}

// Stop has nothing to save: every change is written before it is answered.
func (c *Counter) Stop(ctx context.Context, ac *runner.ActorContext) error {
	ac.Logger().Info("counter: stopped", "count", c.get())
	return nil
}

func (c *Counter) get() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count
}

// add adds n and stores the new count; the count changes only once it is stored.
func (c *Counter) add(ctx context.Context, n int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := c.count + n
	if err := c.ac.KV().Put(ctx, countKey, binary.BigEndian.AppendUint64(nil, uint64(next))); err != nil {
		return 0, err
	}
	c.count = next
	return next, nil
}

func (c *Counter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/" && r.Method == http.MethodGet:
		writeCount(w, c.get())
	case r.URL.Path == "/" && r.Method == http.MethodPost:
		by := int64(1)
		if s := r.URL.Query().Get("by"); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				http.Error(w, "by: not an integer", http.StatusBadRequest)
				return
			}
			by = n
		}
		n, err := c.add(r.Context(), by)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		writeCount(w, n)
	case r.URL.Path == "/sleep" && r.Method == http.MethodPost:
		if err := c.ac.Sleep(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	case r.URL.Path == "/" || r.URL.Path == "/sleep":
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}

func writeCount(w http.ResponseWriter, n int64) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, strconv.FormatInt(n, 10)+"\n")
}

func (c *Counter) ServeWebSocket(ctx context.Context, ws *runner.WebSocket) {
	for {
		typ, msg, err := ws.Read(ctx)
		if err != nil {
			return
		}
		if typ != runner.MessageText || string(msg) != "+" {
			_ = ws.Close(1003, `send the text "+"`)
			return
		}
		n, err := c.add(ctx, 1)
		if err != nil {
			_ = ws.Close(1011, "cannot store the count")
			return
		}
		if err := ws.Write(ctx, runner.MessageText, []byte(strconv.FormatInt(n, 10))); err != nil {
			return
		}
	}
}
