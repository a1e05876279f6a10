package ui

import (
	"net/http"

	"github.com/berthhq/berth/engine/samples"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/rerr"
)

// samplesBody is the body of /ui/samples.
type samplesBody struct {
	Node       string           `json:"node"`
	IntervalMs int64            `json:"interval_ms"`
	Samples    []samples.Sample `json:"samples"`
}

// serveSamples answers GET /ui/samples: this node's metrics history, oldest first (at most
// samples.DefaultKeep). The metrics count every namespace, so a namespace token is refused
// (403 api.forbidden).
func serveSamples(w http.ResponseWriter, r *http.Request, o Options) {
	if !auth.FromContext(r.Context()).Global() {
		writeError(w, r, rerr.APIForbidden())
		return
	}
	out := samplesBody{Node: o.Node, Samples: []samples.Sample{}}
	if o.Samples != nil {
		out.IntervalMs = o.Samples.Interval().Milliseconds()
		out.Samples = o.Samples.Samples()
	}
	writeJSON(w, out)
}
