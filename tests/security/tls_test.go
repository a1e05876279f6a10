package security

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/tlstest"
	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/runner/runnertest"
	"github.com/berthhq/berth/tests/internal/harness"
)

const soon = 30 * time.Second

// The guard port over TLS, end to end: the npm runner connects over wss (trusting the test's
// authority through NODE_EXTRA_CA_CERTS), an actor created with the Go client over https
// answers through the gateway, the Go runner SDK connects too, and plain HTTP is refused.
func TestTLSEndToEnd(t *testing.T) {
	harness.NeedNode(t)
	ca := tlstest.NewCA(t, "berth-test")
	e := harness.StartEngine(t, harness.Settings{TLS: ca})
	if !strings.HasPrefix(e.URL, "https://") {
		t.Fatalf("engine URL %s", e.URL)
	}

	// Plain HTTP to the TLS port gets no API answer.
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + strings.TrimPrefix(e.URL, "https://") + "/actors?namespace=default"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || strings.Contains(string(b), "actors") {
			t.Errorf("plain HTTP to the TLS port: %d %s, want 400 and no API answer", resp.StatusCode, b)
		}
	}
	// A client that does not trust the authority is refused.
	if _, err := plain.Get(e.URL + "/health"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("https without trusting the authority: %v, want a certificate error", err)
	}

	// The npm runner over wss.
	npm := harness.StartNode(t, "npm runner", "gateway-runner.mjs",
		[]string{"BERTH_ENDPOINT=" + e.URL, "NODE_EXTRA_CA_CERTS=" + ca.File, "RUNNER_NAME=echo"})
	npm.AwaitEv("connected", soon)

	// The Go client over https.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	defer hc.CloseIdleConnections()
	c, err := client.New(e.URL, client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), soon)
	defer cancel()
	a, err := c.Actors().Create(ctx, client.ActorCreateOptions{Name: "echo", Pool: "echo", CrashPolicy: client.CrashDestroy})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(e.URL + "/gateway/" + string(a.ActorId) + "/hello")
	if err != nil {
		t.Fatal(err)
	}
	var echo struct {
		ActorID string `json:"actorId"`
		Path    string `json:"path"`
	}
	err = json.NewDecoder(resp.Body).Decode(&echo)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 || echo.ActorID != string(a.ActorId) || echo.Path != "/hello" {
		t.Fatalf("gateway over https: %d %+v %v", resp.StatusCode, echo, err)
	}

	// The Go runner SDK over wss.
	rec := runnertest.NewRecorder()
	cfg := runnertest.Config(e.URL, rec)
	cfg.Name = "go-pool"
	cfg.HTTPClient = hc
	r := runnertest.NewRunner(t, cfg)
	runnertest.Start(t, r)
	if id := runnertest.Next(t, rec.Connected, "OnConnected"); id == "" {
		t.Fatal("the Go runner connected without a runner id")
	}
}

// Mutual TLS on api-peer: a caller without a certificate of the nodes' authority is refused
// at the handshake; one with such a certificate is served.
func TestPeerMutualTLS(t *testing.T) {
	ca, other := tlstest.NewCA(t, "nodes"), tlstest.NewCA(t, "stranger")
	var peerURL string
	e := harness.StartEngine(t, harness.Settings{TLS: ca, Configure: func(cfg map[string]any) {
		peer := cfg["api_peer"].(map[string]any)
		peer["tls"].(map[string]any)["client_auth"] = true
		dc := cfg["topology"].(map[string]any)["datacenters"].(map[string]any)["default"].(map[string]any)
		peerURL = dc["peer_url"].(string)
	}})
	dir := t.TempDir()
	mine, err := tls.LoadX509KeyPair(ca.Issue(t, dir, "node-2", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := tls.LoadX509KeyPair(other.Issue(t, dir, "intruder", "127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	get := func(certs []tls.Certificate) (int, error) {
		hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), Certificates: certs}}}
		defer hc.CloseIdleConnections()
		resp, err := hc.Get(peerURL + "/datacenters")
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if status, err := get(nil); err == nil {
		t.Errorf("api-peer without a client certificate: %d, want a refused handshake", status)
	}
	if status, err := get([]tls.Certificate{theirs}); err == nil {
		t.Errorf("api-peer with another authority's certificate: %d, want a refused handshake", status)
	}
	if status, err := get([]tls.Certificate{mine}); err != nil || status != 200 {
		t.Errorf("api-peer with the nodes' certificate: %d %v, want 200", status, err)
	}
	if e.URL == "" {
		t.Fatal("no engine")
	}
}
