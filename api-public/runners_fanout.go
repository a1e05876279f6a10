package apipublic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"runtime"
	"strconv"
	"sync"
	"weak"

	"github.com/labstack/echo/v4"

	apipeer "github.com/berthhq/berth/api-peer"
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

// The merged lists pass each item on as the datacenter wrote it: a page is decoded only as
// far as the merge needs (the item's raw JSON and the fields it is ordered by) and written
// back by concatenation, instead of decoding every field and encoding it again. The items
// come from berth's own api-peer, which writes compact JSON objects.

// rawRunner is one runner of a datacenter's page: its JSON and its (create_ts, id).
type rawRunner struct {
	raw      []byte
	createTs int64
	id       id.ID
}

func (r *rawRunner) UnmarshalJSON(b []byte) error { return r.parse(bytes.Clone(b)) }

// parse reads the runner b, which it keeps.
func (r *rawRunner) parse(b []byte) error {
	var v [2][]byte
	return r.fromMembers(b, v, membersTo(v[:], b, runnerMembers...))
}

// runnerMembers are the members of a runner the merge reads, as fromMembers takes them.
var runnerMembers = []string{"runner_id", "create_ts"}

// fromMembers reads the runner b, which it keeps, from the values of runnerMembers that a
// quick scan found (ok) in b, or else the slow way.
func (r *rawRunner) fromMembers(b []byte, v [2][]byte, ok bool) error {
	r.raw = b
	if ok {
		var err error
		if r.id, err = idOf(v[0]); err == nil {
			if r.createTs, err = strconv.ParseInt(string(v[1]), 10, 64); err == nil {
				return nil
			}
		}
	}
	var k struct { // what the quick scan could not read, the slow way
		RunnerID id.ID `json:"runner_id"`
		CreateTs int64 `json:"create_ts"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	r.createTs, r.id = k.CreateTs, k.RunnerID
	return nil
}

// idOf parses a JSON string holding an id, without escapes.
func idOf(v []byte) (id.ID, error) {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return id.ID{}, errNotString
	}
	return id.Parse(string(v[1 : len(v)-1]))
}

var errNotString = errors.New("not a plain JSON string")

// rawEnvoy is one envoy of a datacenter's page: its JSON and its (create_ts, key); the merge
// adds its datacenter's label.
type rawEnvoy struct {
	raw      []byte
	createTs int64
	key      string
	label    uint16
}

func (e *rawEnvoy) UnmarshalJSON(b []byte) error { return e.parse(bytes.Clone(b)) }

// parse reads the envoy b, which it keeps.
func (e *rawEnvoy) parse(b []byte) error {
	var v [2][]byte
	return e.fromMembers(b, v, membersTo(v[:], b, envoyMembers...))
}

// envoyMembers are the members of an envoy the merge reads, as fromMembers takes them.
var envoyMembers = []string{"envoy_key", "create_ts"}

// fromMembers reads the envoy b, which it keeps, from the values of envoyMembers that a
// quick scan found (ok) in b, or else the slow way.
func (e *rawEnvoy) fromMembers(b []byte, v [2][]byte, ok bool) error {
	e.raw = b
	if ok {
		key := v[0]
		if len(key) >= 2 && key[0] == '"' && key[len(key)-1] == '"' && bytes.IndexByte(key, '\\') < 0 {
			var err error
			if e.createTs, err = strconv.ParseInt(string(v[1]), 10, 64); err == nil {
				e.key = string(key[1 : len(key)-1])
				return nil
			}
		}
	}
	var k struct { // what the quick scan could not read, the slow way
		EnvoyKey string `json:"envoy_key"`
		CreateTs int64  `json:"create_ts"`
	}
	if err := json.Unmarshal(b, &k); err != nil {
		return err
	}
	e.createTs, e.key = k.CreateTs, k.EnvoyKey
	return nil
}

// members returns the raw values of the members of the JSON object obj named names (nil for
// one that is absent), in one quick pass that decodes nothing. obj must be valid JSON
// (encoding/json checks a whole document before it calls an UnmarshalJSON method); on other
// input it returns meaningless values but never panics or loops. ok is false when obj is not
// an object or a member name holds an escape: the caller then decodes the slow way. Of a
// repeated name the last is taken, as encoding/json does.
func members(obj []byte, names ...string) (vals [][]byte, ok bool) {
	vals = make([][]byte, len(names))
	if !membersTo(vals, obj, names...) {
		return nil, false
	}
	return vals, true
}

// membersTo is members writing the values into vals, which has one element per name.
func membersTo(vals [][]byte, obj []byte, names ...string) (ok bool) {
	_, ok = objectMembers(vals, obj, skipSpace(obj, 0), names...)
	return ok
}

// objectMembers is membersTo for the object that begins at obj[i], which also returns the
// index just past the object.
func objectMembers(vals [][]byte, obj []byte, i int, names ...string) (end int, ok bool) {
	clear(vals)
	if i >= len(obj) || obj[i] != '{' {
		return i, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			if i < len(obj) && obj[i] == '}' {
				i++
			}
			return i, true // past the '}', or the end
		}
		end := skipValue(obj, i)
		if end-1 <= i {
			return end, false
		}
		name := obj[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			return end, false
		}
		i = skipSpace(obj, end)
		i = skipSpace(obj, i+1) // the ':'
		end = skipValue(obj, i)
		for k, n := range names {
			if string(name) == n {
				vals[k] = obj[i:end]
			}
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i++
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the valid JSON value that starts at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = skipValue(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// peerPage is a datacenter's answer to GET /runners or /envoys, decoded for merging.
type peerPage struct {
	Runners    []rawRunner
	Envoys     []rawEnvoy
	Pagination apihttp.Pagination
}

// UnmarshalJSON reads {"runners"|"envoys": [...], "pagination": {...}} with the quick scans,
// which is safe: encoding/json has checked that b is valid JSON before it calls this. The
// items are read in the same pass that finds them.
func (p *peerPage) UnmarshalJSON(b []byte) error {
	b = bytes.Clone(b) // the items are kept: one copy for all of them
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return p.slow(b)
	}
	var pagination []byte
	for i++; ; {
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			break // '}' or the end
		}
		end := skipValue(b, i)
		name := b[i+1 : max(i+1, end-1)]
		if end-1 <= i || bytes.IndexByte(name, '\\') >= 0 {
			return p.slow(b)
		}
		i = skipSpace(b, skipSpace(b, end)+1) // past the ':'
		var err error
		switch string(name) {
		case "runners": // a repeated member replaces the earlier one, as in encoding/json
			p.Runners = p.Runners[:0]
			i, err = eachObject(b, i, runnerMembers, func(el []byte, v [2][]byte, ok bool) error {
				var r rawRunner
				err := r.fromMembers(el, v, ok)
				p.Runners = append(p.Runners, r)
				return err
			})
		case "envoys":
			p.Envoys = p.Envoys[:0]
			i, err = eachObject(b, i, envoyMembers, func(el []byte, v [2][]byte, ok bool) error {
				var e rawEnvoy
				err := e.fromMembers(el, v, ok)
				p.Envoys = append(p.Envoys, e)
				return err
			})
		case "pagination":
			end = skipValue(b, i)
			pagination, i = b[i:end], end
		default:
			i = skipValue(b, i)
		}
		if err != nil {
			return err
		}
		i = skipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i++
		}
	}
	if pagination == nil {
		return nil
	}
	return json.Unmarshal(pagination, &p.Pagination)
}

// slow decodes b with encoding/json, for what the quick scan does not read.
func (p *peerPage) slow(b []byte) error {
	var slow struct {
		Runners    []rawRunner        `json:"runners"`
		Envoys     []rawEnvoy         `json:"envoys"`
		Pagination apihttp.Pagination `json:"pagination"`
	}
	err := json.Unmarshal(b, &slow)
	p.Runners, p.Envoys, p.Pagination = slow.Runners, slow.Envoys, slow.Pagination
	return err
}

// eachObject calls f with each element of the valid JSON array that begins at arr[i], and
// returns the index just past the array (for null, past the null). An element that is an
// object comes with the values of the two members names and ok from objectMembers, read in
// the pass that finds the element's end; for another element ok is false.
func eachObject(arr []byte, i int, names []string, f func(el []byte, v [2][]byte, ok bool) error) (int, error) {
	if i >= len(arr) || arr[i] != '[' {
		return skipValue(arr, i), nil
	}
	for i++; ; {
		i = skipSpace(arr, i)
		if i >= len(arr) {
			return i, nil
		}
		if arr[i] == ']' {
			return i + 1, nil
		}
		var v [2][]byte
		end, ok := objectMembers(v[:], arr, i, names...)
		if !ok {
			end = skipValue(arr, i)
		}
		if err := f(arr[i:end:end], v, ok); err != nil {
			return end, err
		}
		i = skipSpace(arr, end)
		if i < len(arr) && arr[i] == ',' {
			i++
		}
	}
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

// localPeers holds, for each Server with a store (Deps.DB), the api-peer of its own
// datacenter that serves that datacenter's part of a fan-out in process (fanOutListLocal):
// weak.Pointer[Server] → *apipeer.Server, made at first use. The entry goes when its Server
// is collected. It is a table beside Server, not a field of it, only because server.go is
// outside this change; a field set by New would do the same.
var localPeers sync.Map

// localPeer returns the Server's in-process api-peer, or nil when it has no store. The
// api-peer has the Server's store, topology and peer client, so it answers as the
// datacenter's own api-peer does (namespace names resolved at the leader and cached, for a
// datacenter that is not the leader). It is not given the admin token: the request was
// authenticated by api-public already.
func (s *Server) localPeer() *apipeer.Server {
	if s.deps.DB == nil {
		return nil
	}
	key := weak.Make(s)
	if p, ok := localPeers.Load(key); ok {
		return p.(*apipeer.Server)
	}
	p, loaded := localPeers.LoadOrStore(key, apipeer.New(apipeer.Deps{
		DB: s.deps.DB, Topology: s.deps.Topology, Peers: s.deps.Peers, Log: s.deps.Log,
	}))
	if !loaded {
		runtime.AddCleanup(s, func(k weak.Pointer[Server]) { localPeers.Delete(k) }, key)
	}
	return p.(*apipeer.Server)
}
