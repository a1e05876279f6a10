package apipublic

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
)

// Every endpoint that takes a body refuses one over its bound with 413
// guard.invalid_request_body, whether it says its length or not, before reading past the
// bound; a body within the bound goes on to the handler's own checks.
func TestBodyLimits(t *testing.T) {
	topo := apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{{Name: "a", Label: 1, IsLeader: true}}}
	h := New(Deps{Topology: topo, Build: build, Bodies: apihttp.BodyLimits{Large: 4096, Small: 1024}}).Handler()
	aid := id.New(1).String()
	for _, ep := range []struct {
		method, path string
		limit        int
	}{
		{http.MethodPost, "/namespaces", 1024},
		{http.MethodPut, "/runner-configs/pool?namespace=default", 4096},
		{http.MethodPost, "/actors?namespace=default", 4096},
		{http.MethodPut, "/actors?namespace=default", 4096},
		{http.MethodPost, "/actors/" + aid + "/sleep?namespace=default", 1024},
		{http.MethodPost, "/actors/" + aid + "/reschedule?namespace=default", 1024},
	} {
		for _, size := range []int{ep.limit, ep.limit + 1} {
			// A JSON object of exactly size bytes: within the bound it is the handler's to
			// judge (an unknown field: 400), over it 413.
			body := `{"x":"` + strings.Repeat("a", size-8) + `"}`
			for _, chunked := range []bool{false, true} {
				var r io.Reader = strings.NewReader(body)
				if chunked {
					r = io.MultiReader(r) // hides the length: sent chunked
				}
				req := httptest.NewRequest(ep.method, ep.path, r)
				if chunked {
					req.ContentLength = -1
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				over := size > ep.limit
				if got := w.Header().Get(apihttp.HeaderError) == "guard.invalid_request_body"; got != over || over && w.Code != 413 {
					t.Errorf("%s %s, %d bytes (chunked %v): %d %s", ep.method, ep.path, size, chunked, w.Code, w.Body)
				}
			}
		}
	}
}
