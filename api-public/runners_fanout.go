package apipublic

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
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
	return fanOutListLocal[T](ctx, s, dcs, path, query, nil)
}

// fanOutListLocal is fanOutList with this datacenter's part served by local, when local is
// not nil, instead of by its api-peer through the peer client: the same answer without
// encoding it to JSON and decoding it again. local gets the datacenter's context (its
// timeout) and query.
func fanOutListLocal[T any](ctx context.Context, s *Server, dcs []apihttp.Datacenter, path string,
	query func(dc apihttp.Datacenter) (url.Values, error), local func(ctx context.Context, dc apihttp.Datacenter) (T, error)) ([]T, error) {
	results := apihttp.FanOut(ctx, dcs, s.deps.DatacenterTimeout,
		func(ctx context.Context, dc apihttp.Datacenter) (T, error) {
			if local != nil && dc.Label == s.deps.Topology.Local {
				return local(ctx, dc)
			}
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

// The merged lists pass each item on as the datacenter wrote it (json.RawMessage), decoding
// only the fields it is ordered by, and write the page back by concatenation.

// rawRunner is one runner of a datacenter's page: its JSON and its (create_ts, id).
type rawRunner struct {
	raw      json.RawMessage
	createTs int64
	id       id.ID
}

func (r *rawRunner) UnmarshalJSON(b []byte) error {
	var k struct {
		RunnerID id.ID `json:"runner_id"`
		CreateTs int64 `json:"create_ts"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	r.raw, r.createTs, r.id = bytes.Clone(b), k.CreateTs, k.RunnerID
	return nil
}

// rawEnvoy is one envoy of a datacenter's page: its JSON and its (create_ts, key); the merge
// adds its datacenter's label.
type rawEnvoy struct {
	raw      json.RawMessage
	createTs int64
	key      string
	label    uint16
}

func (e *rawEnvoy) UnmarshalJSON(b []byte) error {
	var k struct {
		EnvoyKey string `json:"envoy_key"`
		CreateTs int64  `json:"create_ts"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	e.raw, e.createTs, e.key = bytes.Clone(b), k.CreateTs, k.EnvoyKey
	return nil
}

// peerPage is a datacenter's answer to GET /runners or /envoys, decoded for merging.
type peerPage struct {
	Runners    []rawRunner        `json:"runners"`
	Envoys     []rawEnvoy         `json:"envoys"`
	Pagination apihttp.Pagination `json:"pagination"`
}

// writeList answers 200 with {"<field>": [items...], "pagination": {"cursor": cursor}}.
func writeList(c echo.Context, field string, items [][]byte, cursor *string) error {
	n := 64 + len(field)
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	b = appendJSONString(b, field)
	b = append(b, ":["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, `],"pagination":{"cursor":`...)
	if cursor == nil {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, *cursor)
	}
	b = append(b, "}}\n"...)
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, b)
}

// appendJSONString appends s as a JSON string.
func appendJSONString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always encodes
	return append(b, q...)
}
