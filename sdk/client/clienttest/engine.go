// Package clienttest is test support for package client, as net/http/httptest is for
// net/http: Engine, a fake of berth's public API that serves canned runners, envoys,
// namespaces, datacenters and runner configs, and records what it was asked.
//
// It serves the examples and tests of package client, the engine's tests of the SDK (which
// also check every exchange against api-public/openapi.yaml), and any program's tests of its
// own use of the client. Nothing here is meant for production code.
package clienttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/berthhq/berth/sdk/client"
)

// Engine serves canned data the way the public API does: bearer auth, required namespace,
// repeated and comma-separated filters, cursors, and JSON errors. Each list is pre-sorted the
// way the engine sorts it. It is an http.Handler: serve it with httptest.NewServer.
type Engine struct {
	token string

	// FailAfter, when > 0, makes the runners list fail with a 503 once that many pages were
	// served. Set it before the first request.
	FailAfter int
	// StuckCursor makes the runners list hand back the cursor it was given. Set it before
	// the first request.
	StuckCursor bool

	mu         sync.Mutex
	runners    []client.Runner
	envoys     []client.Envoy
	namespaces []client.Namespace
	configs    map[string]map[string]client.RunnerConfig // runner name → dc → config
	upserts    []string                                  // raw PUT bodies
	queries    map[string][]string                       // path → raw queries, in order
	auths      []string                                  // Authorization headers seen
	pageSizes  []int                                     // runner page sizes served
}

// NamespaceID is the id of the namespace "default".
const NamespaceID = "0b8y5rkfbb3xvdwlcu9mbvqwnimg2t"

// RunnerID is the id of the i-th runner of NewEngine, newest first.
func RunnerID(i int) string { return fmt.Sprintf("r%029d", i) }

// NewEngine returns an engine that requires the bearer token token (none if "") and holds n
// runners in pools "pool-a" and "pool-b" (newest first; every third one stopped), the
// "default" namespace, two envoys and one normal runner config (pool-a in the datacenter
// "default"). Its datacenters are "default" (label 1) and "eu" (label 2).
func NewEngine(token string, n int) *Engine {
	f := &Engine{token: token, configs: map[string]map[string]client.RunnerConfig{}, queries: map[string][]string{}}
	for i := range n {
		pool := "pool-a"
		if i%2 == 1 {
			pool = "pool-b"
		}
		r := client.Runner{
			RunnerId: RunnerID(i), NamespaceId: NamespaceID, Datacenter: "default", Name: pool,
			Key: fmt.Sprintf("key-%d", i), Version: 1, TotalSlots: 10, RemainingSlots: int32(10 - i%10),
			CreateTs: int64(1767225600000 - i), LastPingTs: 1767225600000, LastRtt: 2,
		}
		if i%3 == 0 {
			stop := r.CreateTs + 1000
			r.StopTs = &stop
		}
		f.runners = append(f.runners, r)
	}
	f.envoys = []client.Envoy{
		{EnvoyKey: "envoy-1", NamespaceId: NamespaceID, Datacenter: "default", PoolName: "pool-a", Version: 2, Slots: 5, CreateTs: 2, LastPingTs: 3, LastRtt: 1},
		{EnvoyKey: "envoy-2", NamespaceId: NamespaceID, Datacenter: "default", PoolName: "pool-b", Version: 2, Slots: 5, CreateTs: 1, LastPingTs: 3, LastRtt: 1},
	}
	f.namespaces = []client.Namespace{{NamespaceId: NamespaceID, Name: "default", DisplayName: "Default", CreateTs: 1}}
	f.configs["pool-a"] = map[string]client.RunnerConfig{"default": {Normal: &client.RunnerConfigNormal{}}}
	return f
}

// Queries returns the raw queries of the requests for path, in order.
func (f *Engine) Queries(path string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.queries[path])
}

// Auths returns the Authorization header of every request, in order.
func (f *Engine) Auths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.auths)
}

// PageSizes returns how many runners each page of the runners list held, in order.
func (f *Engine) PageSizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.pageSizes)
}

// Upserts returns the bodies of the runner-config upserts (PUT), in order.
func (f *Engine) Upserts() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.upserts)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, group, code, message string, meta map[string]any) {
	body := map[string]any{"group": group, "code": code, "message": message}
	if meta != nil {
		body["metadata"] = meta
	}
	w.Header().Set("x-rivet-error", group+"."+code)
	w.Header().Set("x-rivet-ray-id", "ray-1")
	writeJSON(w, status, body)
}

type page struct {
	Cursor *string `json:"cursor"`
}

// paginate returns the items of one page of n items: the cursor is the offset of the next item.
func paginate(q url.Values, n int) (from, to int, next *string, err error) {
	limit := 100
	if s := q.Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			return 0, 0, nil, fmt.Errorf("limit")
		}
	}
	if s := q.Get("cursor"); s != "" {
		if from, err = strconv.Atoi(s); err != nil || from < 0 {
			return 0, 0, nil, fmt.Errorf("cursor")
		}
	}
	from = min(from, n)
	to = min(from+limit, n)
	if to < n {
		s := strconv.Itoa(to)
		next = &s
	}
	return from, to, next, nil
}

// ids merges a repeated parameter with its deprecated comma-separated form.
func ids(q url.Values, repeated, csv string) []string {
	out := slices.Clone(q[repeated])
	for _, s := range strings.Split(q.Get(csv), ",") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// ServeHTTP answers one request of the public API.
func (f *Engine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	q := r.URL.Query()
	f.queries[r.URL.Path] = append(f.queries[r.URL.Path], r.URL.RawQuery)
	f.auths = append(f.auths, r.Header.Get("Authorization"))

	if r.URL.Path != "/health" && r.URL.Path != "/metadata" && f.token != "" {
		switch auth := r.Header.Get("Authorization"); {
		case auth == "":
			writeError(w, 401, "api", "unauthorized", "Authentication required", nil)
			return
		case auth != "Bearer "+f.token:
			writeError(w, 403, "api", "forbidden", "Access denied", nil)
			return
		}
	}
	namespaced := r.URL.Path == "/runners" || r.URL.Path == "/runners/names" || r.URL.Path == "/envoys" || strings.HasPrefix(r.URL.Path, "/runner-configs")
	if namespaced {
		ns := q.Get("namespace")
		if ns == "" {
			writeError(w, 400, "api", "bad_request", "Request is invalid", map[string]any{"reason": "namespace: required"})
			return
		}
		if !slices.ContainsFunc(f.namespaces, func(n client.Namespace) bool { return n.Name == ns }) {
			writeError(w, 404, "namespace", "not_found", "The namespace does not exist.", nil)
			return
		}
	}

	switch {
	case r.Method == "GET" && r.URL.Path == "/runners":
		want := ids(q, "runner_id", "runner_ids")
		var match []client.Runner
		for _, rn := range f.runners {
			if (q.Get("name") == "" || rn.Name == q.Get("name")) &&
				(len(want) == 0 || slices.Contains(want, rn.RunnerId)) &&
				(q.Get("include_stopped") == "true" || rn.StopTs == nil) {
				match = append(match, rn)
			}
		}
		if f.FailAfter > 0 && len(f.pageSizes) >= f.FailAfter {
			writeError(w, 503, "guard", "service_unavailable", "Service unavailable.", nil)
			return
		}
		from, to, next, err := paginate(q, len(match))
		if err != nil {
			writeError(w, 400, "api", "bad_request", "Request is invalid", map[string]any{"reason": err.Error()})
			return
		}
		if f.StuckCursor && q.Get("cursor") != "" {
			c := q.Get("cursor")
			next = &c
		}
		f.pageSizes = append(f.pageSizes, to-from)
		writeJSON(w, 200, map[string]any{"runners": match[from:to], "pagination": page{next}})

	case r.Method == "GET" && r.URL.Path == "/runners/names":
		var names []string
		for _, rn := range f.runners {
			if !slices.Contains(names, rn.Name) {
				names = append(names, rn.Name)
			}
		}
		slices.Sort(names)
		// The cursor is the last name of the page, exclusive.
		if c := q.Get("cursor"); c != "" {
			i, _ := slices.BinarySearch(names, c)
			for i < len(names) && names[i] <= c {
				i++
			}
			names = names[i:]
		}
		limit := 100
		if s := q.Get("limit"); s != "" {
			limit, _ = strconv.Atoi(s)
		}
		var next *string
		if len(names) > limit {
			names = names[:limit]
			next = &names[limit-1]
		}
		writeJSON(w, 200, map[string]any{"names": names, "pagination": page{next}})

	case r.Method == "GET" && r.URL.Path == "/envoys":
		var match []client.Envoy
		for _, e := range f.envoys {
			if (q.Get("name") == "" || e.PoolName == q.Get("name")) && (len(q["envoy_key"]) == 0 || slices.Contains(q["envoy_key"], e.EnvoyKey)) {
				match = append(match, e)
			}
		}
		from, to, next, err := paginate(q, len(match))
		if err != nil {
			writeError(w, 400, "api", "bad_request", "Request is invalid", nil)
			return
		}
		writeJSON(w, 200, map[string]any{"envoys": match[from:to], "pagination": page{next}})

	case r.Method == "GET" && r.URL.Path == "/namespaces":
		want := ids(q, "namespace_id", "namespace_ids")
		var match []client.Namespace
		for _, n := range f.namespaces {
			if (q.Get("name") == "" || n.Name == q.Get("name")) && (len(want) == 0 || slices.Contains(want, n.NamespaceId)) {
				match = append(match, n)
			}
		}
		from, to, next, err := paginate(q, len(match))
		if err != nil {
			writeError(w, 400, "api", "bad_request", "Request is invalid", nil)
			return
		}
		writeJSON(w, 200, map[string]any{"namespaces": match[from:to], "pagination": page{next}})

	case r.Method == "POST" && r.URL.Path == "/namespaces":
		var in struct {
			Name        string `json:"name"`
			DisplayName string `json:"display_name"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			writeError(w, 400, "api", "bad_request", "Request is invalid", nil)
			return
		}
		if slices.ContainsFunc(f.namespaces, func(n client.Namespace) bool { return n.Name == in.Name }) {
			writeError(w, 409, "namespace", "name_not_unique", "Namespace name must be unique.", map[string]any{"name": in.Name})
			return
		}
		n := client.Namespace{NamespaceId: fmt.Sprintf("n%029d", len(f.namespaces)), Name: in.Name, DisplayName: in.DisplayName, CreateTs: 5}
		f.namespaces = append(f.namespaces, n)
		writeJSON(w, 200, map[string]any{"namespace": n})

	case r.Method == "GET" && r.URL.Path == "/datacenters":
		writeJSON(w, 200, map[string]any{
			"datacenters": []client.Datacenter{{Label: 1, Name: "default", Url: "http://127.0.0.1:6420"}, {Label: 2, Name: "eu", Url: "https://eu.example"}},
			"pagination":  page{},
		})

	case r.Method == "GET" && r.URL.Path == "/runner-configs":
		want := ids(q, "runner_name", "runner_names")
		out := map[string]any{}
		for name, dcs := range f.configs {
			if len(want) > 0 && !slices.Contains(want, name) {
				continue
			}
			resp := map[string]any{}
			for dc, cfg := range dcs {
				kind := client.VariantNormal
				if cfg.Serverless != nil {
					kind = client.VariantServerless
				}
				if v := q.Get("variant"); v != "" && v != string(kind) {
					continue
				}
				resp[dc] = client.RunnerConfigResponse{Normal: cfg.Normal, Serverless: cfg.Serverless, Metadata: cfg.Metadata}
			}
			if len(resp) > 0 {
				out[name] = map[string]any{"datacenters": resp}
			}
		}
		writeJSON(w, 200, map[string]any{"runner_configs": out, "pagination": page{}})

	case r.Method == "PUT" && strings.HasPrefix(r.URL.Path, "/runner-configs/"):
		b, _ := io.ReadAll(r.Body)
		f.upserts = append(f.upserts, string(b))
		var body struct {
			Datacenters map[string]client.RunnerConfig `json:"datacenters"`
		}
		if err := json.Unmarshal(b, &body); err != nil {
			writeError(w, 400, "api", "bad_request", "Request is invalid", nil)
			return
		}
		name := strings.TrimPrefix(r.URL.Path, "/runner-configs/")
		changed := false
		for _, cfg := range body.Datacenters {
			changed = changed || cfg.Serverless != nil
		}
		f.configs[name] = body.Datacenters
		writeJSON(w, 200, map[string]any{"endpoint_config_changed": changed})

	case r.Method == "DELETE" && strings.HasPrefix(r.URL.Path, "/runner-configs/"):
		name := strings.TrimPrefix(r.URL.Path, "/runner-configs/")
		if _, ok := f.configs[name]; !ok {
			writeError(w, 404, "runner_config", "not_found", "No config for this runner exists.", nil)
			return
		}
		delete(f.configs, name)
		writeJSON(w, 200, map[string]any{})

	default:
		writeError(w, 404, "api", "not_found", "The requested resource was not found", nil)
	}
}
