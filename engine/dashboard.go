package engine

import (
	"net/http"
	"strings"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/engine/reqlog"
	"github.com/berthhq/berth/engine/ui"
	"github.com/berthhq/berth/guard"
	"github.com/berthhq/berth/guard/core"
)

var _ guard.RequestObserver = (*reqlog.Log)(nil)

// gatewayTelemetry is the gateway's telemetry, with the inspector's request log.
func (e *Engine) gatewayTelemetry() guard.Telemetry {
	t := e.obs.gateway()
	t.Requests = &e.requests
	return t
}

// dashboard is the configuration of /ui: the engine's auth, the public API it reads in
// process, and clients seen as the gateway sees them (guard.trusted_proxies), so that its
// failed-login limit counts the real client and its cookie is Secure behind a trusted
// TLS-terminating proxy (X-Forwarded-Proto: https).
func (e *Engine) dashboard(api http.Handler, peer *apipeer.Server, label uint16) ui.Options {
	return ui.Options{
		Auth: e.auth, ResolveNamespace: peer.ResolveNamespace, API: api, DB: e.db, Label: label, Requests: &e.requests,
		Samples: e.obs.samples, Node: e.cluster.ID(),
		ClientIP: func(r *http.Request) string { return core.ClientIP(r, e.trusted) },
		SecureCookie: func(r *http.Request) bool {
			return r.TLS != nil || e.trusted.Sent(r) && strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
		},
	}
}
