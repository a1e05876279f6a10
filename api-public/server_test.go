package apipublic

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

	apipeer "github.com/berthhq/berth/api-peer"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/rerr"
)

var build = apihttp.BuildInfo{Version: "v1", GitSHA: "sha", BuildTimestamp: "ts", GoVersion: "go1.26"}

func get(t *testing.T, h http.Handler, target, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	b, _ := io.ReadAll(w.Body)
	return w.Code, strings.TrimSpace(string(b))
}

func TestEndpoints(t *testing.T) {
	topo := apihttp.Topology{Local: 2, Datacenters: []apihttp.Datacenter{
		{Name: "eu", Label: 1, IsLeader: true, PublicURL: "https://eu.example"},
		{Name: "us", Label: 2, PublicURL: "https://us.example"},
	}}
	h := New(Deps{Topology: topo, Build: build, Auth: auth.Admin("tok")}).Handler()
	tests := []struct {
		target, token string
		status        int
		body          string
	}{
		{"/health", "", 200, `{"status":"ok","runtime":"engine","version":"v1"}`},
		{"/metadata", "", 200, `{"runtime":"engine","version":"v1","git_sha":"sha","build_timestamp":"ts","go_version":"go1.26","envoy_protocol_version":8,"runner_protocol_version":7}`},
		{"/datacenters", "tok", 200, `{"datacenters":[{"label":1,"name":"eu","url":"https://eu.example"},{"label":2,"name":"us","url":"https://us.example"}],"pagination":{"cursor":null}}`},
		{"/datacenters", "", 401, `{"group":"api","code":"unauthorized","message":"Authentication required"}`},
		{"/datacenters", "nope", 403, `{"group":"api","code":"forbidden","message":"Access denied"}`},
	}
	for _, tt := range tests {
		status, body := get(t, h, tt.target, tt.token)
		if status != tt.status || body != tt.body {
			t.Errorf("GET %s: %d %s\nwant %d %s", tt.target, status, body, tt.status, tt.body)
		}
	}
}

// TestFanOutExtension checks the pattern routes.go describes: a fanned-out endpoint reaches the
// local api-peer in process and the others over HTTP, survives a datacenter that hangs, and
// re-emits a peer's error.
func TestFanOutExtension(t *testing.T) {
	topo := apihttp.Topology{Local: 1, Datacenters: []apihttp.Datacenter{
		{Name: "one", Label: 1, PeerURL: "http://127.0.0.1:1"}, // local: never dialled
		{Name: "two", Label: 2, IsLeader: true},
		{Name: "three", Label: 3},
	}}
	peerHandler := func(version string) http.Handler {
		return apipeer.New(apipeer.Deps{Topology: topo, Build: apihttp.BuildInfo{Version: version}, Auth: auth.Admin("tok")}).Handler()
	}
	two := httptest.NewServer(peerHandler("v-two"))
	defer two.Close()
	release := make(chan struct{})
	three := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer three.Close()
	defer close(release)
	topo.Datacenters[1].PeerURL = two.URL
	topo.Datacenters[2].PeerURL = three.URL

	peers := apihttp.NewPeerClient(apihttp.PeerOptions{}).WithLocal(1, peerHandler("v-one"))
	defer peers.Close()
	s := New(Deps{Topology: topo, Peers: peers, DatacenterTimeout: 300 * time.Millisecond, Build: build,
		Auth: auth.Admin("tok"), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	e := apihttp.New(apihttp.Options{Auth: auth.Admin("tok"), Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	s.Register(e)
	e.GET("/versions", func(c echo.Context) error {
		res, err := fanOutGet[apihttp.HealthResponse](c.Request().Context(), s, "/health", nil)
		if err != nil {
			return err
		}
		var out []string
		for _, r := range res {
			out = append(out, r.Datacenter.Name+"="+r.Value.Version)
		}
		return c.JSON(http.StatusOK, out)
	})
	e.GET("/leader-missing", func(c echo.Context) error {
		return s.toLeader(c.Request().Context(), http.MethodGet, "/nope", nil, nil, nil)
	})

	status, body := get(t, e, "/versions", "tok")
	if status != 200 || body != `["one=v-one","two=v-two"]` {
		t.Errorf("fan-out: %d %s", status, body)
	}
	status, body = get(t, e, "/leader-missing", "tok")
	if status != 404 || body != `{"group":"api","code":"not_found","message":"The requested resource was not found"}` {
		t.Errorf("leader error re-emitted: %d %s", status, body)
	}

	// With the local and the leader gone too, the fan-out fails and names a datacenter.
	topo.Datacenters[1].PeerURL = three.URL
	s.deps.Topology = apihttp.Topology{Local: 9, Datacenters: topo.Datacenters[1:]}
	_, err := fanOutGet[apihttp.HealthResponse](context.Background(), s, "/health", nil)
	if e, ok := rerr.As(err); !ok || e.Key() != "datacenter.unreachable" || e.Metadata["datacenter"] != "two" {
		t.Errorf("all failed: %v", err)
	}
}
