package reference

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/berthhq/berth/bench/sidebyside"
	"github.com/berthhq/berth/tests/internal/harness"
)

// A Target is one deployment the scenarios run against: the Rivet engine (the reference),
// one berth node, or two berth nodes on PostgreSQL and NATS behind a round-robin TCP proxy.
type Target struct {
	Name      string
	URL       string // where clients go: the guard port, or the proxy in front of the nodes
	Token     string // the admin token, "" for an open engine
	Reference bool
	// Nodes are the guard URLs of the engine's nodes (one, unless a cluster), for scenarios
	// that go to a given node.
	Nodes []string
	// Crash SIGKILLs node i and starts it again on the same store (and node id), as after a
	// machine's crash; it returns once the node answers /health again. Scenarios that crash
	// a node run alone (scenario.alone).
	Crash func(t *testing.T, i int)
}

// adminToken is the token of the engines that have one.
const adminToken = "diff-admin-token"

// startReference runs the Rivet engine 2.3.19 on loopback ports with its file-system store
// (its default), as sidebyside.ReferenceCommand starts it, and waits until /health answers.
func startReference(t *testing.T, name, token string) *Target {
	t.Helper()
	bin, err := sidebyside.ReferenceBinary(t.Logf)
	if err != nil {
		t.Fatalf("the reference engine is needed (`.ci/run` installs it): %v", err)
	}
	ports := harness.FreePorts(t, 3)
	dir := t.TempDir()
	url := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	extra := map[string]any{"topology": map[string]any{"datacenter_label": 1, "datacenters": map[string]any{
		"default": map[string]any{"datacenter_label": 1, "is_leader": true, "public_url": url,
			"peer_url": fmt.Sprintf("http://127.0.0.1:%d", ports[1])},
	}}}
	if token != "" {
		extra["auth"] = map[string]any{"admin_token": token}
	}
	cmd, err := sidebyside.ReferenceCommand(bin, dir, ports[0], ports[1], ports[2], extra)
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "rivet.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { logf.Close() })
	cmd.Stdout, cmd.Stderr = logf, logf
	p := harness.StartProc(t, name, cmd)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("%s log:\n%s", name, harness.Tail(b, 40))
		}
	})
	waitHealthy(t, name, url, p.Exited())
	tg := &Target{Name: name, URL: url, Token: token, Reference: true, Nodes: []string{url}}
	tg.Crash = func(st *testing.T, _ int) {
		p.Kill()
		<-p.Exited()
		again, err := sidebyside.ReferenceCommand(bin, dir, ports[0], ports[1], ports[2], extra)
		if err != nil {
			st.Fatal(err)
		}
		again.Stdout, again.Stderr = logf, logf
		p = harness.StartProc(t, name, again)
		waitHealthy(st, name, url, p.Exited())
	}
	return tg
}

// startBerth runs one berth node with the embedded store in a folder of its own.
func startBerth(t *testing.T, name, token string) *Target {
	t.Helper()
	e := harness.NewEngine(t, harness.Settings{AdminToken: token}, "file://"+filepath.Join(t.TempDir(), "berth"))
	e.Start()
	return &Target{Name: name, URL: e.URL, Token: token, Nodes: []string{e.URL},
		Crash: func(*testing.T, int) { e.Kill(); e.Start() }}
}

// startCluster runs two berth nodes of one datacenter on a PostgreSQL store (a prefix of
// BERTH_TEST_POSTGRES_URL's database) and an in-process NATS server, behind a round-robin
// TCP proxy: each new connection goes to the next node, so that a client's requests, a
// runner's socket and the gateway traffic to its actors land on different nodes. It returns
// nil without PostgreSQL.
func startCluster(t *testing.T, name, token string) *Target {
	t.Helper()
	base := os.Getenv("BERTH_TEST_POSTGRES_URL")
	if base == "" {
		t.Logf("%s: BERTH_TEST_POSTGRES_URL is not set (`source .ci/postgres.sh` starts a server): no cluster target", name)
		return nil
	}
	store := harness.SharedStore(t, base)
	nats := harness.StartNATS(t)
	proxy := startProxy(t)
	tg := &Target{Name: name, URL: proxy.URL(), Token: token}
	var engines []*harness.Engine
	var backends []string
	for _, node := range []string{"a", "b"} {
		e := harness.NewEngine(t, harness.Settings{AdminToken: token, Configure: func(cfg map[string]any) {
			cfg["pubsub"] = map[string]any{"url": nats}
			cfg["node"] = map[string]any{"id": name + "-" + node}
			dc := cfg["topology"].(map[string]any)["datacenters"].(map[string]any)["default"].(map[string]any)
			dc["public_url"] = proxy.URL()
		}}, store)
		e.Start()
		engines = append(engines, e)
		tg.Nodes = append(tg.Nodes, e.URL)
		backends = append(backends, e.URL[len("http://"):])
	}
	proxy.SetBackends(backends)
	tg.Crash = func(_ *testing.T, i int) { engines[i].Kill(); engines[i].Start() }
	return tg
}

// waitHealthy polls url/health until it answers 200, the process exits or 30 s pass.
func waitHealthy(t *testing.T, name, url string, exited <-chan struct{}) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		select {
		case <-exited:
			t.Fatalf("%s exited before it was healthy", name)
		case <-time.After(20 * time.Millisecond): // polling interval
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not healthy after 30s (last error %v)", name, err)
		}
	}
}
