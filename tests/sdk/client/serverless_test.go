package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berthhq/berth/sdk/client"
)

// TestEngineCalls reads the engine's health and metadata, checks a serverless endpoint and
// refreshes a pool's metadata.
func TestEngineCalls(t *testing.T) {
	c, _ := actorsEngine(t)
	ctx := context.Background()
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/metadata" || r.Header.Get("x-app") != "yes" {
			http.NotFound(w, r)
			return
		}
		io.WriteString(w, `{"runtime":"rivetkit","version":"2.3.19","envoyProtocolVersion":8,"envoy":{"kind":{"serverless":{}},"version":1}}`)
	}))
	defer app.Close()
	if h, err := c.Health(ctx); err != nil || h.Status != "ok" {
		t.Fatalf("health: %+v, %v", h, err)
	}
	if m, err := c.Metadata(ctx); err != nil || m.RunnerProtocolVersion == nil {
		t.Fatalf("metadata: %+v, %v", m, err)
	}
	rc := c.RunnerConfigs()

	got, err := rc.ServerlessHealthCheck(ctx, app.URL+"/api", map[string]string{"x-app": "yes"})
	if err != nil || got.Success == nil || got.Success.Version != "2.3.19" || got.Failure != nil {
		t.Fatalf("check: %+v, %v", got, err)
	}
	got, err = rc.ServerlessHealthCheck(ctx, app.URL+"/api", nil) // without the header: 404
	if err != nil || got.Failure == nil || got.Failure.Error.Metadata.Kind != "non_success_status" {
		t.Fatalf("check without the header: %+v, %v", got, err)
	}

	if _, err := rc.Upsert(ctx, "sl", map[string]client.RunnerConfig{"dc": {Serverless: &client.RunnerConfigServerless{
		Url: app.URL + "/api", RequestLifespan: 3600, Headers: &map[string]string{"x-app": "yes"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := rc.RefreshMetadata(ctx, "sl"); err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if err := rc.RefreshMetadata(ctx, "nope"); !errors.Is(err, &client.APIError{Group: "core", Code: "internal_error"}) {
		t.Fatalf("refresh of a pool that is serverless nowhere: %v", err)
	}
}
