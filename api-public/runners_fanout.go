package apipublic

import (
	"context"
	"log/slog"
	"net/url"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/rerr"
)

// fanOutList calls GET path on the api-peer of every datacenter in dcs, with the query
// query(dc), at most apihttp.FanOutParallelism at once and each within Deps.DatacenterTimeout,
// and returns the answers in the order of dcs. It is the fan-out of the paged lists (runners,
// runner names, envoys).
//
// All or nothing: it fails when any datacenter fails, where the Rivet engine fails only when
// every one does and lists what the others sent. A paged list cannot do that safely: the
// cursor of a page built without one datacenter moves past that datacenter's items, so the
// following pages would skip them for good, silently. The error names the datacenter: the
// first 4xx answer in dcs order if there is one (the request itself is wrong, e.g.
// namespace.not_found, whatever the other datacenters say), else the first failure in dcs
// order, which is datacenter.unreachable naming the datacenter that did not answer in time
// or could not be reached (or the error a datacenter sent). Every failure is logged (Warn,
// with the ray id). The request takes about one Deps.DatacenterTimeout at most, never longer.
func fanOutList[T any](ctx context.Context, s *Server, dcs []apihttp.Datacenter, path string,
	query func(dc apihttp.Datacenter) (url.Values, error)) ([]T, error) {
	results := apihttp.FanOut(ctx, dcs, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (T, error) {
			var out T
			q, err := query(dc)
			if err != nil {
				return out, rerr.Internal(err)
			}
			err = s.deps.Peers.Get(ctx, dc, path, q, &out)
			return out, err
		})
	var first, firstClient error
	out := make([]T, 0, len(results))
	for _, r := range results {
		if r.Err == nil {
			out = append(out, r.Value)
			continue
		}
		apihttp.Logger(ctx).LogAttrs(ctx, slog.LevelWarn, "datacenter failed in a list fan-out",
			slog.String("path", path), slog.String("datacenter", r.Datacenter.Name), slog.String("error", r.Err.Error()))
		if first == nil {
			first = r.Err
		}
		if firstClient == nil && rerr.HTTPStatus(r.Err) < 500 {
			firstClient = r.Err
		}
	}
	switch {
	case firstClient != nil:
		return nil, firstClient
	case first != nil:
		return nil, first
	}
	return out, nil
}
