package client_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthhq/berth/sdk/client"
)

// The client against a real engine and against clienttest.Engine, with every exchange
// checked against api-public/openapi.yaml, is tested in the engine's module (tests/sdk/client).

func TestNew(t *testing.T) {
	for _, endpoint := range []string{"localhost:6420", "", "ftp://x"} {
		if _, err := client.New(endpoint); err == nil {
			t.Errorf("New(%q) succeeded", endpoint)
		}
	}
	if _, err := client.New("http://x", client.WithNamespace("")); err == nil {
		t.Error("an empty namespace was accepted")
	}
	c, err := client.New("https://berth.example/base")
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace() != client.DefaultNamespace || c.InNamespace("other").Namespace() != "other" || c.Namespace() != client.DefaultNamespace {
		t.Error("InNamespace must return a new client and leave c alone")
	}
}

func TestErrorBodies(t *testing.T) {
	cases := []struct {
		status    int
		body      string
		group     string
		message   string
		retryable bool
	}{
		{503, `{"group":"guard","code":"service_unavailable","message":"Service unavailable."}`, "guard", "Service unavailable.", true},
		{502, `<html>bad gateway</html>`, "", "<html>bad gateway</html>", true},
		{504, ``, "", "", true},
		{429, `{"group":"guard","code":"rate_limit","message":"Too many requests."}`, "guard", "Too many requests.", true},
		{500, `{"group":"core","code":"internal_error","message":"An internal error occurred"}`, "core", "An internal error occurred", false},
		{400, `{"message":"no group"}`, "", `{"message":"no group"}`, false},
		{400, strings.Repeat("x", 2000), "", strings.Repeat("x", 512), false},
	}
	for _, tc := range cases {
		// A server that does not follow the contract (a proxy in between): no validation here.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		c, _ := client.New(srv.URL)
		_, err := c.Datacenters().List(context.Background())
		srv.Close()
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) {
			t.Errorf("%d %q: %v is not an *APIError", tc.status, tc.body, err)
			continue
		}
		if apiErr.Status != tc.status || apiErr.Group != tc.group || apiErr.Message != tc.message || apiErr.Retryable() != tc.retryable {
			t.Errorf("%d %q: got %+v retryable %v", tc.status, tc.body, apiErr, apiErr.Retryable())
		}
	}

	// A 200 that is not the documented JSON is an error too, not a silent zero value.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ok")) }))
	defer srv.Close()
	c, _ := client.New(srv.URL)
	if _, err := c.Datacenters().List(context.Background()); err == nil || !strings.Contains(err.Error(), "decoding") {
		t.Errorf("garbage 200: %v", err)
	}
}
