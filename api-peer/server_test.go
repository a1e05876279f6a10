package apipeer

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
)

func testServer(token string) http.Handler {
	return New(Deps{
		Topology: apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{
			{Name: "default", Label: 1, IsLeader: true, PublicURL: "http://127.0.0.1:6420", PeerURL: "http://127.0.0.1:6421"},
		}},
		Build: apihttp.BuildInfo{Version: "v1", GitSHA: "sha", BuildTimestamp: "ts", GoVersion: "go1.26"},
		Auth:  auth.Admin(token),
	}).Handler()
}

func get(t *testing.T, h http.Handler, target, token string) (int, string, http.Header) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Body)
	return w.Code, strings.TrimSpace(string(b)), w.Header()
}

func TestEndpoints(t *testing.T) {
	h := testServer("tok")
	tests := []struct {
		target, token string
		status        int
		body          string
	}{
		{"/health", "", 200, `{"status":"ok","runtime":"engine","version":"v1"}`},
		{"/metadata", "", 200, `{"runtime":"engine","version":"v1","git_sha":"sha","build_timestamp":"ts","go_version":"go1.26","envoy_protocol_version":8,"runner_protocol_version":7}`},
		{"/datacenters", "tok", 200, `{"datacenters":[{"label":1,"name":"default","url":"http://127.0.0.1:6420"}],"pagination":{"cursor":null}}`},
		{"/datacenters", "", 401, `{"group":"api","code":"unauthorized","message":"Authentication required"}`},
		{"/datacenters", "bad", 403, `{"group":"api","code":"forbidden","message":"Access denied"}`},
		{"/datacenters?namespace=default", "tok", 200, `{"datacenters":[{"label":1,"name":"default","url":"http://127.0.0.1:6420"}],"pagination":{"cursor":null}}`},
		{"/datacenters?x=1", "tok", 400, `{"group":"api","code":"bad_request","message":"Request is invalid: x: unknown query parameter; this endpoint takes namespace","metadata":{"field":"x","reason":"x: unknown query parameter; this endpoint takes namespace"}}`},
		{"/nope", "tok", 404, `{"group":"api","code":"not_found","message":"The requested resource was not found"}`},
	}
	for _, tt := range tests {
		status, body, hdr := get(t, h, tt.target, tt.token)
		if status != tt.status || body != tt.body {
			t.Errorf("GET %s: %d %s\nwant %d %s", tt.target, status, body, tt.status, tt.body)
		}
		if hdr.Get(apihttp.HeaderRayID) == "" {
			t.Errorf("GET %s: no ray id", tt.target)
		}
	}
}
