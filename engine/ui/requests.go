package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// heartbeat is how often an idle request log stream sends a comment, so that proxies keep it.
const heartbeat = 15 * time.Second

// serveActorRequests answers GET /ui/actor-requests?actor_id= with a Server-Sent Events
// stream of the HTTP requests this node's gateway serves to the actor from now on: an
// event "ready" once watching, then one "request" event per request (reqlog.Entry as JSON),
// "dropped" with a count when the page fell behind. Requests served by other nodes are not
// shown. At most reqlog.MaxWatchers streams per node (503 beyond).
func serveActorRequests(w http.ResponseWriter, r *http.Request, o Options) {
	aid, _, ok := readActor(w, r, o, func(udb.ReadTransaction, id.ID) (struct{}, error) { return struct{}{}, nil })
	if !ok {
		return
	}
	entries, dropped, stop, watching := o.Requests.Watch(aid)
	if !watching {
		writeError(w, r, rerr.GuardServiceUnavailable())
		return
	}
	defer stop()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	send := func(event string, v any) bool {
		b, _ := json.Marshal(v)
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !send("ready", map[string]string{"actor_id": aid.String()}) {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	var reported int64
	for {
		select {
		case <-r.Context().Done():
			return
		case e := <-entries:
			if !send("request", e) {
				return
			}
			if n := dropped(); n != reported {
				reported = n
				if !send("dropped", map[string]int64{"count": n}) {
					return
				}
			}
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": heartbeat\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
