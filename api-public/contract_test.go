package apipublic

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berthhq/berth/api-public/openapitest"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
)

// TestContract checks the served endpoints, and their error answers, against openapi.yaml.
func TestContract(t *testing.T) {
	topo := apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{
		{Name: "default", Label: 1, IsLeader: true, PublicURL: "http://127.0.0.1:6420"},
	}}
	h := openapitest.Handler(t, New(Deps{Topology: topo, Build: build, Auth: auth.Admin("tok")}).Handler())
	for _, tc := range []struct {
		target, token string
		status        int
		unchecked     bool // a request the contract does not describe
	}{
		{"/health", "", 200, false},
		{"/metadata", "", 200, false},
		{"/datacenters", "tok", 200, false},
		{"/datacenters", "", 401, false},
		{"/datacenters", "wrong", 403, false},
		{"/datacenters?bogus=1", "tok", 400, true},
	} {
		req := httptest.NewRequest(http.MethodGet, tc.target, nil)
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		if tc.unchecked {
			req = openapitest.Unchecked(req)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tc.status {
			t.Errorf("GET %s: %d, want %d", tc.target, w.Code, tc.status)
		}
	}
}
