package openapitest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// recordingT collects the errors a check reports instead of failing the test.
type recordingT struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingT) Helper() {}

func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *recordingT) reported() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.errs, "\n")
}

const (
	nsID     = "0b8y5rkfbb3xvdwlcu9mbvqwnimg2t"
	runnerID = "1c9z6slgcc4ywexmdv0ncwrxojnh3u"
)

var validRunner = `{"runner_id":"` + runnerID + `","namespace_id":"` + nsID + `","datacenter":"default","name":"pool","key":"k1",
	"version":1,"total_slots":10,"remaining_slots":9,"create_ts":1767225600000,"drain_ts":null,
	"last_ping_ts":1767225601000,"last_connected_ts":1767225600500,"last_rtt":3,"metadata":{"a":1}}`

// A runner without the optional fields at all (absent and null are both allowed).
var sparseRunner = `{"runner_id":"` + runnerID + `","namespace_id":"` + nsID + `","datacenter":"default","name":"pool","key":"k1",
	"version":1,"total_slots":10,"remaining_slots":9,"create_ts":1767225600000,"last_ping_ts":1767225601000,"last_rtt":3}`

const notFoundBody = `{"group":"namespace","code":"not_found","message":"The namespace does not exist."}`
const badRequestBody = `{"group":"api","code":"bad_request","message":"Request is invalid","metadata":{"reason":"x"}}`

type exchange struct {
	name       string
	method     string
	target     string
	reqBody    string
	status     int
	respBody   string
	respHeader map[string]string
	unchecked  bool
	want       []string // substrings the report must contain; none means it must be clean
}

var exchanges = []exchange{
	{name: "runners page", method: "GET", target: "/runners?namespace=default&limit=2",
		status: 200, respBody: `{"runners":[` + validRunner + `,` + sparseRunner + `],"pagination":{"cursor":"1767225600000"}}`},
	{name: "last page has a null cursor", method: "GET", target: "/runners?namespace=default&cursor=abc",
		status: 200, respBody: `{"runners":[],"pagination":{"cursor":null}}`},
	{name: "repeated and deprecated id params", method: "GET",
		target: "/runners?namespace=default&runner_id=" + runnerID + "&runner_id=" + strings.ToUpper(nsID) + "&runner_ids=" + runnerID + ",&include_stopped=true",
		status: 200, respBody: `{"runners":[],"pagination":{"cursor":null}}`},
	{name: "runner without create_ts", method: "GET", target: "/runners?namespace=default",
		status: 200, respBody: `{"runners":[` + strings.Replace(validRunner, `"create_ts":1767225600000,`, "", 1) + `],"pagination":{"cursor":null}}`,
		want: []string{"create_ts"}},
	{name: "runner id in upper case", method: "GET", target: "/runners?namespace=default",
		status: 200, respBody: `{"runners":[` + strings.Replace(validRunner, runnerID, strings.ToUpper(runnerID), 1) + `],"pagination":{"cursor":null}}`,
		want: []string{"runner_id"}},
	{name: "runner with an unknown field", method: "GET", target: "/runners?namespace=default",
		status: 200, respBody: `{"runners":[` + strings.Replace(validRunner, `"key":"k1"`, `"key":"k1","createTs":1`, 1) + `],"pagination":{"cursor":null}}`,
		want: []string{"createTs"}},
	{name: "pagination without cursor", method: "GET", target: "/runners?namespace=default",
		status: 200, respBody: `{"runners":[],"pagination":{}}`, want: []string{"cursor"}},
	{name: "missing namespace answered 400", method: "GET", target: "/runners",
		status: 400, respBody: badRequestBody},
	{name: "missing namespace accepted", method: "GET", target: "/runners",
		status: 200, respBody: `{"runners":[],"pagination":{"cursor":null}}`,
		want: []string{"must answer 4xx, not 200", "namespace"}},
	{name: "unknown query parameter accepted", method: "GET", target: "/runners?namespace=default&bogus=1",
		status: 200, respBody: `{"runners":[],"pagination":{"cursor":null}}`,
		want: []string{"undocumented query parameter(s) bogus"}},
	{name: "unknown query parameter answered 400", method: "GET", target: "/runners?namespace=default&bogus=1",
		status: 400, respBody: badRequestBody},
	{name: "limit out of range answered 500", method: "GET", target: "/runners?namespace=default&limit=-1",
		status: 500, respBody: `{"group":"core","code":"internal_error","message":"An internal error occurred"}`,
		want: []string{"must answer 4xx, not 500", "limit"}},
	{name: "unknown namespace", method: "GET", target: "/runners?namespace=nope",
		status: 404, respBody: notFoundBody, respHeader: map[string]string{"x-rivet-error": "namespace.not_found"}},
	{name: "x-rivet-error disagrees with the body", method: "GET", target: "/runners?namespace=nope",
		status: 404, respBody: notFoundBody, respHeader: map[string]string{"x-rivet-error": "actor.not_found"},
		want: []string{`x-rivet-error header is "actor.not_found"`}},
	{name: "error body with an unknown field", method: "GET", target: "/runners?namespace=nope",
		status: 404, respBody: `{"group":"namespace","code":"not_found","message":"m","detail":"x"}`,
		want: []string{"detail"}},
	{name: "error body that is not JSON", method: "GET", target: "/runners?namespace=nope",
		status: 404, respBody: `not found`, want: []string{"response"}},
	{name: "undeclared status", method: "GET", target: "/health",
		status: 401, respBody: `{"group":"api","code":"unauthorized","message":"Authentication required"}`,
		want: []string{"status is not supported"}},
	{name: "health", method: "GET", target: "/health",
		status: 200, respBody: `{"status":"ok","runtime":"engine","version":"0.1.0"}`},
	{name: "health ignores query parameters", method: "GET", target: "/health?probe=1",
		status: 200, respBody: `{"status":"ok","runtime":"engine","version":"0.1.0"}`},
	{name: "metadata", method: "GET", target: "/metadata",
		status: 200, respBody: `{"runtime":"engine","version":"v1","git_sha":"sha","build_timestamp":"ts","go_version":"go1.26","envoy_protocol_version":8,"runner_protocol_version":7}`},
	{name: "names", method: "GET", target: "/runners/names?namespace=default",
		status: 200, respBody: `{"names":["a","b"],"pagination":{"cursor":"b"}}`},
	{name: "envoys", method: "GET", target: "/envoys?namespace=default&name=pool&envoy_key=e1&envoy_key=e2",
		status: 200, respBody: `{"envoys":[{"envoy_key":"e1","namespace_id":"` + nsID + `","datacenter":"default","pool_name":"pool",
			"version":2,"slots":5,"create_ts":1,"stop_ts":null,"last_ping_ts":2,"last_rtt":0,"metadata":null}],"pagination":{"cursor":null}}`},
	{name: "create namespace", method: "POST", target: "/namespaces", reqBody: `{"name":"ns","display_name":"NS"}`,
		status: 200, respBody: `{"namespace":{"namespace_id":"` + nsID + `","name":"ns","display_name":"NS","create_ts":1}}`},
	{name: "create namespace with an unknown field accepted", method: "POST", target: "/namespaces",
		reqBody: `{"name":"ns","display_name":"NS","extra":1}`,
		status:  200, respBody: `{"namespace":{"namespace_id":"` + nsID + `","name":"ns","display_name":"NS","create_ts":1}}`,
		want: []string{"must answer 4xx", "extra"}},
	{name: "create namespace that exists", method: "POST", target: "/namespaces", reqBody: `{"name":"ns","display_name":"NS"}`,
		status: 409, respBody: `{"group":"namespace","code":"name_not_unique","message":"Namespace name must be unique."}`},
	{name: "upsert runner config", method: "PUT", target: "/runner-configs/pool?namespace=default",
		reqBody: `{"datacenters":{"default":{"normal":{}},"dc2":{"serverless":{"url":"https://x","request_lifespan":300,"headers":{"a":"b"}},"metadata":{"k":[1]}}}}`,
		status:  200, respBody: `{"endpoint_config_changed":true}`},
	{name: "upsert with both kinds accepted", method: "PUT", target: "/runner-configs/pool?namespace=default",
		reqBody: `{"datacenters":{"default":{"normal":{},"serverless":{"url":"https://x","request_lifespan":300}}}}`,
		status:  200, respBody: `{"endpoint_config_changed":false}`, want: []string{"must answer 4xx"}},
	{name: "upsert with neither kind accepted", method: "PUT", target: "/runner-configs/pool?namespace=default",
		reqBody: `{"datacenters":{"default":{"metadata":{}}}}`,
		status:  200, respBody: `{"endpoint_config_changed":false}`, want: []string{"must answer 4xx"}},
	{name: "list runner configs", method: "GET", target: "/runner-configs?namespace=default&variant=serverless&runner_name=a&runner_name=b",
		status: 200, respBody: `{"runner_configs":{"pool":{"datacenters":{"default":{"serverless":{"url":"https://x","request_lifespan":300},
			"protocol_version":6,"runner_pool_error":{"serverless_http_error":{"status_code":500,"body":"x"}}}}}},"pagination":{"cursor":null}}`},
	{name: "bad variant accepted", method: "GET", target: "/runner-configs?namespace=default&variant=other",
		status: 200, respBody: `{"runner_configs":{},"pagination":{"cursor":null}}`, want: []string{"must answer 4xx", "variant"}},
	{name: "delete runner config", method: "DELETE", target: "/runner-configs/pool?namespace=default",
		status: 200, respBody: `{}`},
	{name: "datacenters", method: "GET", target: "/datacenters",
		status: 200, respBody: `{"datacenters":[{"label":1,"name":"default","url":"http://127.0.0.1:6420"}],"pagination":{"cursor":null}}`},
	{name: "actor with errors of both shapes", method: "GET", target: "/actors?namespace=default&name=a",
		status: 200, respBody: `{"actors":[
			{"actor_id":"` + runnerID + `","name":"a","key":null,"namespace_id":"` + nsID + `","datacenter":"default","runner_name_selector":"pool",
			 "crash_policy":"sleep","create_ts":1,"start_ts":null,"error":"no_capacity"},
			{"actor_id":"` + runnerID + `","name":"a","key":"k","namespace_id":"` + nsID + `","datacenter":"default","runner_name_selector":"pool",
			 "crash_policy":"restart","create_ts":1,"error":{"runner_connection_lost":{"runner_id":"` + runnerID + `"}}}],"pagination":{"cursor":null}}`},
	{name: "undocumented method answered 405", method: "DELETE", target: "/runners",
		status: 405, respBody: `{"group":"api","code":"method_not_allowed","message":"Method not allowed"}`,
		respHeader: map[string]string{"x-rivet-error": "api.method_not_allowed"}},
	{name: "undocumented method answered 405 without a body", method: "DELETE", target: "/runners",
		status: 405, respBody: ``, respHeader: map[string]string{"Content-Type": "text/plain"},
		want: []string{"application/json"}},
	{name: "undocumented method answered 404", method: "PATCH", target: "/namespaces",
		status: 404, respBody: notFoundBody, want: []string{"must answer 405, not 404"}},
	{name: "undocumented path", method: "GET", target: "/nope",
		status: 404, respBody: notFoundBody, want: []string{"not in openapi.yaml"}},
	{name: "undocumented path, unchecked", method: "GET", target: "/nope", unchecked: true,
		status: 404, respBody: notFoundBody},
}

// server answers each request with the canned response of the exchange named in x-case.
func server(t *testing.T) *httptest.Server {
	byName := map[string]exchange{}
	for _, e := range exchanges {
		byName[e.name] = e
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		e, ok := byName[r.Header.Get("x-case")]
		if !ok {
			t.Errorf("no exchange %q", r.Header.Get("x-case"))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		for k, v := range e.respHeader {
			w.Header().Set(k, v)
		}
		w.WriteHeader(e.status)
		io.WriteString(w, e.respBody)
	}))
}

func newRequest(t *testing.T, base string, e exchange) *http.Request {
	var body io.Reader
	if e.reqBody != "" {
		body = strings.NewReader(e.reqBody)
	}
	req, err := http.NewRequest(e.method, base+e.target, body)
	if err != nil {
		t.Fatal(err)
	}
	if e.reqBody != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-case", e.name)
	if e.unchecked {
		req = Unchecked(req)
	}
	return req
}

func checkReport(t *testing.T, e exchange, got string) {
	t.Helper()
	if len(e.want) == 0 {
		if got != "" {
			t.Errorf("a conforming exchange was reported:\n%s", got)
		}
		return
	}
	if got == "" {
		t.Fatalf("nothing reported; want a report mentioning %q", e.want)
	}
	for _, w := range e.want {
		if !strings.Contains(got, w) {
			t.Errorf("report does not mention %q:\n%s", w, got)
		}
	}
}

func TestTransport(t *testing.T) {
	srv := server(t)
	defer srv.Close()
	for _, e := range exchanges {
		t.Run(e.name, func(t *testing.T) {
			rt := &recordingT{TB: t}
			client := &http.Client{Transport: NewValidatingTransport(rt, nil)}
			resp, err := client.Do(newRequest(t, srv.URL, e))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			// The caller still sees the whole response.
			got, err := io.ReadAll(resp.Body)
			if err != nil || string(got) != e.respBody || resp.StatusCode != e.status {
				t.Errorf("caller got %d %q (%v), want %d %q", resp.StatusCode, got, err, e.status, e.respBody)
			}
			checkReport(t, e, rt.reported())
		})
	}
}

func TestHandler(t *testing.T) {
	srv := server(t)
	defer srv.Close()
	// The same canned handler, this time wrapped on the server side and called with a recorder.
	inner := srv.Config.Handler
	for _, e := range exchanges {
		t.Run(e.name, func(t *testing.T) {
			rt := &recordingT{TB: t}
			req := httptest.NewRequest(e.method, e.target, strings.NewReader(e.reqBody))
			if e.reqBody == "" {
				req.Body = http.NoBody
			} else {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("x-case", e.name)
			if e.unchecked {
				req = Unchecked(req)
			}
			rec := httptest.NewRecorder()
			Handler(rt, inner).ServeHTTP(rec, req)
			if rec.Code != e.status || rec.Body.String() != e.respBody {
				t.Errorf("client got %d %q, want %d %q", rec.Code, rec.Body.String(), e.status, e.respBody)
			}
			checkReport(t, e, rt.reported())
		})
	}
}

func TestValidate(t *testing.T) {
	srv := server(t)
	defer srv.Close()
	for _, e := range exchanges {
		if e.unchecked {
			continue // Validate checks what it is given
		}
		t.Run(e.name, func(t *testing.T) {
			req := newRequest(t, srv.URL, e)
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			rt := &recordingT{TB: t}
			Validate(rt, req, resp, body) // the body is read again through req.GetBody
			checkReport(t, e, rt.reported())
		})
	}
}

func TestValidateWithoutGetBody(t *testing.T) {
	req := httptest.NewRequest("POST", "/namespaces", strings.NewReader(`{"name":"a","display_name":"A"}`))
	rt := &recordingT{TB: t}
	Validate(rt, req, &http.Response{StatusCode: 200, Header: http.Header{}}, nil)
	if got := rt.reported(); !strings.Contains(got, "no GetBody") {
		t.Errorf("want a report about the unreadable body, got %q", got)
	}
}

func TestSpec(t *testing.T) {
	doc, err := Spec()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi = %q, want 3.0.3", doc.OpenAPI)
	}
	for _, name := range []string{"Namespace", "Runner", "Envoy", "Datacenter", "Pagination", "RunnerConfig", "Error", "Actor"} {
		if doc.Components.Schemas[name] == nil {
			t.Errorf("schema %s missing", name)
		}
	}
	if _, ok := doc.Components.SecuritySchemes["bearer_auth"]; !ok || len(doc.Security) != 1 {
		t.Errorf("bearer_auth must be the global security scheme")
	}
}

func TestOperations(t *testing.T) {
	ops, err := Operations()
	if err != nil {
		t.Fatal(err)
	}
	served := []string{
		"GET /health", "GET /metadata", "GET /datacenters",
		"GET /namespaces", "POST /namespaces",
		"GET /runners", "GET /runners/names", "POST /runners/{runner_id}/drain", "GET /envoys", "POST /envoys/{envoy_key}/drain",
		"GET /runner-configs", "PUT /runner-configs/{runner_name}", "DELETE /runner-configs/{runner_name}",
		"POST /runner-configs/{runner_name}/refresh-metadata", "POST /runner-configs/serverless-health-check",
		"GET /actors", "POST /actors", "PUT /actors", "DELETE /actors/{actor_id}", "GET /actors/names",
		"POST /actors/{actor_id}/sleep", "POST /actors/{actor_id}/reschedule",
		"GET /actors/{actor_id}/kv/keys/{key}",
	}
	pending := []string{
		"GET /health/fanout",
	}
	var gotServed, gotPending []string
	doc, _ := Spec()
	for _, op := range ops {
		if op.ID == "" {
			t.Errorf("%s has no operationId", op)
		}
		if op.Pending == "" {
			gotServed = append(gotServed, op.String())
		} else {
			gotPending = append(gotPending, op.String())
		}
		o := doc.Paths.Value(op.Path).GetOperation(op.Method)
		// /health and /metadata are open; every other operation has the global bearer scheme.
		public := op.Path == "/health" || op.Path == "/metadata"
		if open := o.Security != nil && len(*o.Security) == 0; open != public {
			t.Errorf("%s: open = %v, want %v", op, open, public)
		}
		// Every error status has an Error body.
		for code, ref := range o.Responses.Map() {
			if code[0] == '4' || code[0] == '5' {
				mt := ref.Value.Content.Get("application/json")
				if mt == nil || mt.Schema == nil || mt.Schema.Ref != "#/components/schemas/Error" {
					t.Errorf("%s %s: the body must be an Error", op, code)
				}
			}
		}
	}
	slices.Sort(served)
	slices.Sort(pending)
	slices.Sort(gotServed)
	slices.Sort(gotPending)
	if !slices.Equal(gotServed, served) {
		t.Errorf("served operations:\n got %q\nwant %q", gotServed, served)
	}
	if !slices.Equal(gotPending, pending) {
		t.Errorf("pending operations:\n got %q\nwant %q", gotPending, pending)
	}
}

// TestConcurrent runs checks from many goroutines (the race detector watches the shared spec).
func TestConcurrent(t *testing.T) {
	srv := server(t)
	defer srv.Close()
	client := &http.Client{Transport: NewValidatingTransport(t, nil)}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for _, e := range exchanges[:3] {
				resp, err := client.Do(newRequest(t, srv.URL, e))
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}
