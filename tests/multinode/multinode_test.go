package multinode

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/keys"
	opnode "github.com/berthhq/berth/ops/node"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	_ "github.com/berthhq/berth/pkg/udb/driver/postgres"
	"github.com/berthhq/berth/sdk/runner"
	"github.com/berthhq/berth/tests/internal/harness"
)

// held lists the ownership records node holds in the store at dbURL.
func held(t testing.TB, dbURL, node string) []opnode.Held {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := udb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]opnode.Held, error) {
		return opnode.ListHeld(ctx, r, opnode.ListHeldInput{NodeID: node})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// awaitCond polls cond every 50 ms until it holds or within passes.
func awaitCond(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond) // polling interval
	}
}

// TestThreeNodes: runners spread over three nodes; every actor answers through every node
// (so most requests are relayed to the node holding the runner's socket), and its start
// command reached its runner wherever the actor was created.
func TestThreeNodes(t *testing.T) {
	c := startCluster(t, 3, 6, 12)
	db := c.nodes[0].dbURL
	for _, n := range c.nodes {
		if h := held(t, db, n.id); len(h) == 0 {
			t.Errorf("node %s holds no runner socket: the balancer spread 6 runners over 3 nodes", n.id)
		}
	}
	reachThroughEveryNode(t, c, runnerPool)
}

// TestThreeNodesEnvoys is TestThreeNodes with the actors hosted on envoys: each node holds
// envoy sockets (ownership records keyed by namespace and envoy key), every actor answers
// HTTP and WebSocket requests through every node, and an actor created through any node is
// started on its envoy wherever that envoy's socket is.
func TestThreeNodesEnvoys(t *testing.T) {
	c := startCluster(t, 3, 0, 0)
	c.addEnvoys(t, 6, 12)
	db := c.nodes[0].dbURL
	for _, n := range c.nodes {
		envoys := 0
		for _, h := range held(t, db, n.id) {
			if h.IsEnvoy() {
				envoys++
			}
		}
		if envoys == 0 {
			t.Errorf("node %s holds no envoy socket: the balancer spread 6 envoys over 3 nodes", n.id)
		}
	}
	reachThroughEveryNode(t, c, envoyPool)
}

// TestPlacementPrefersRunnersHere: actors created through one node start on the runners
// whose sockets that node holds, while those are among the emptiest, so that nodes placing
// at once take slots on different runners instead of conflicting on the same slot counts
// (docs/scaling.md).
func TestPlacementPrefersRunnersHere(t *testing.T) {
	c := startCluster(t, 2, 4, 0)
	first := c.nodes[0]
	here := map[string]bool{}
	for _, h := range held(t, first.dbURL, first.id) {
		if !h.IsEnvoy() {
			here[h.RunnerID.String()] = true
		}
	}
	if len(here) != 2 {
		t.Fatalf("node %s holds %d of 4 runner sockets: the balancer alternates between 2 nodes", first.id, len(here))
	}
	const created = 12
	through := newClient(t, c.nodes[:1])
	for range created {
		if _, err := through.createCounterIn(runnerPool); err != nil {
			t.Fatal(err)
		}
	}
	b, err := c.client.do(http.MethodGet, "/runners?namespace=default&name="+runnerPool, "")
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Runners []struct {
			RunnerID       string `json:"runner_id"`
			TotalSlots     int    `json:"total_slots"`
			RemainingSlots int    `json:"remaining_slots"`
		} `json:"runners"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	usedHere, usedElsewhere := 0, 0
	for _, r := range out.Runners {
		if here[r.RunnerID] {
			usedHere += r.TotalSlots - r.RemainingSlots
		} else {
			usedElsewhere += r.TotalSlots - r.RemainingSlots
		}
	}
	if usedHere != created || usedElsewhere != 0 {
		t.Fatalf("%d actors created through node %s: %d on its runners, %d on the other node's; want all on its own",
			created, first.id, usedHere, usedElsewhere)
	}
}

// reachThroughEveryNode checks that each of c's actors counts one POST through each node in
// turn and echoes over a WebSocket through each node, and that a counter created in pool
// through each node answers through every node.
func reachThroughEveryNode(t *testing.T, c *cluster, pool string) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	for _, aid := range c.actors {
		for i, n := range c.nodes {
			v, err := counterOn(hc, n, http.MethodPost, aid)
			if err != nil {
				t.Fatal(err)
			}
			if v != i+1 {
				t.Fatalf("actor %s through node %s: %d, want %d", aid, n.id, v, i+1)
			}
		}
	}
	// WebSockets too: through every node to every actor (relayed when the runner's socket is
	// on another node).
	for _, aid := range c.actors {
		for _, n := range c.nodes {
			echoThrough(t, n, aid)
		}
	}
	// An actor created through each node is placed and answers through the others.
	for _, n := range c.nodes {
		cl := &client{nodes: []*node{n}, http: hc}
		aid, err := cl.createCounterIn(pool)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range c.nodes {
			cm := &client{nodes: []*node{m}, http: hc}
			if _, err := cm.count(http.MethodGet, aid); err != nil {
				t.Fatalf("actor %s created on %s, through %s: %v", aid, n.id, m.id, err)
			}
		}
	}
}

// dialEcho opens a WebSocket to actor aid through node n and checks one echo.
func dialEcho(t *testing.T, n *node, aid string) *websocket.Conn {
	t.Helper()
	// As long as traffic gets to flow again (rollingRestart): the actor's host may still be
	// reconnecting from the previous node's restart, and the gateway waits 30 s for it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.url, "http")+"/gateway/"+aid+"/ws", nil)
	if err != nil {
		t.Fatalf("WebSocket to %s through %s: %v", aid, n.id, err)
	}
	msg := "hello " + n.id
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil || string(b) != msg {
		t.Fatalf("echo through %s: %q %v, want %q", n.id, b, err, msg)
	}
	return ws
}

// echoThrough opens a WebSocket to actor aid through node n and checks one echo.
func echoThrough(t *testing.T, n *node, aid string) {
	t.Helper()
	ws := dialEcho(t, n, aid)
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msg := "again " + n.id
	if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatal(err)
	}
	_, b, err := ws.Read(ctx)
	if err != nil || string(b) != msg {
		t.Fatalf("echo through %s: %q %v, want %q", n.id, b, err, msg)
	}
	_ = ws.Close(websocket.StatusNormalClosure, "")
}

// traffic sends POSTs to random counters through every node until stop, counting the values
// acknowledged per actor and the requests that failed after the client's retries.
type traffic struct {
	acked  sync.Map // actor id → *atomic.Int64
	ok     atomic.Int64
	failed atomic.Int64
	errs   sync.Map // first errors, for the report
	stop   chan struct{}
	wg     sync.WaitGroup
}

func startTraffic(c *cluster, workers int) *traffic {
	tr := &traffic{stop: make(chan struct{})}
	for _, aid := range c.actors {
		tr.acked.Store(aid, new(atomic.Int64))
	}
	for w := range workers {
		tr.wg.Go(func() {
			for {
				select {
				case <-tr.stop:
					return
				default:
				}
				aid := c.actors[rand.IntN(len(c.actors))]
				if _, err := c.client.count(http.MethodPost, aid); err != nil {
					if tr.failed.Add(1) <= 5 {
						tr.errs.Store(fmt.Sprintf("%d-%d", w, tr.failed.Load()), err.Error())
					}
					continue
				}
				tr.ok.Add(1)
				v, _ := tr.acked.Load(aid)
				v.(*atomic.Int64).Add(1)
			}
		})
	}
	return tr
}

func (tr *traffic) finish() {
	close(tr.stop)
	tr.wg.Wait()
}

func (tr *traffic) report(t testing.TB) {
	var msgs []string
	tr.errs.Range(func(_, v any) bool { msgs = append(msgs, v.(string)); return true })
	if tr.failed.Load() > 0 {
		t.Errorf("%d of %d requests failed after retries; first: %s", tr.failed.Load(), tr.failed.Load()+tr.ok.Load(), strings.Join(msgs, "; "))
	}
}

// checkState fails if an actor is gone or answers less than the increments acknowledged to
// the clients (a retried POST may have counted twice, never less).
func (tr *traffic) checkState(t testing.TB, c *cluster) {
	t.Helper()
	for _, aid := range c.actors {
		v, err := c.client.count(http.MethodGet, aid)
		if err != nil {
			t.Fatalf("actor %s lost: %v", aid, err)
		}
		a, _ := tr.acked.Load(aid)
		if acked := a.(*atomic.Int64).Load(); int64(v) < acked {
			t.Errorf("actor %s: counter %d, but %d increments were acknowledged", aid, v, acked)
		}
	}
}

// TestRollingRestart upgrades the three nodes one after the other to another build (SIGTERM,
// then the new binary at the same address) under continuous gateway traffic entering every
// node: no request fails after the client's retries, and no actor or acknowledged increment
// is lost. The second build is this code with another version stamp: the store it finds
// was written by the first (docs/udb.md, "Schema version", for stores of older releases).
func TestRollingRestart(t *testing.T) {
	c := startCluster(t, 3, 6, 12)
	ids := c.runnerIDs()
	next := filepath.Join(t.TempDir(), "berth-next")
	if out, err := harness.GoBuild(next, harness.BerthPackage, "-ldflags=-X main.version="+nextVersion).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, n := range c.nodes {
		n.next = next
	}
	tr := rollingRestart(t, c)
	for _, n := range c.nodes {
		if v := n.version(); v != nextVersion {
			t.Errorf("node %s runs version %q after the upgrade, want %q", n.id, v, nextVersion)
		}
	}
	// Every runner reconnected with its key: same runner id, same actors.
	if got := c.runnerIDs(); fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("runner ids changed over the restarts: %v, then %v", ids, got)
	}
	t.Logf("rolling restart: %d requests acknowledged, %d failed after retries", tr.ok.Load(), tr.failed.Load())
}

// TestRollingRestartEnvoys is TestRollingRestart with envoys beside the runners: the envoy
// sockets a node held move to the other nodes as it drains (its envoys' records released
// with its runners'), and no request to an actor on a runner or an envoy fails after the
// client's retries.
func TestRollingRestartEnvoys(t *testing.T) {
	c := startCluster(t, 3, 3, 6)
	c.addEnvoys(t, 6, 12)
	tr := rollingRestart(t, c)
	for _, e := range c.envoys {
		awaitCond(t, "envoys connected after the restarts", 30*time.Second, func() bool { return e.State() == runner.StateConnected })
	}
	t.Logf("rolling restart with envoys: %d requests acknowledged, %d failed after retries", tr.ok.Load(), tr.failed.Load())
}

// rollingRestart restarts c's nodes one after the other (SIGTERM, then start again at the
// same address) under traffic to every actor entering every node, checks each drain, and
// that no request failed after retries and no acknowledged increment was lost.
func rollingRestart(t *testing.T, c *cluster) *traffic {
	t.Helper()
	tr := startTraffic(c, 4)
	for _, n := range c.nodes {
		before := tr.ok.Load()
		awaitCond(t, "traffic flowing", 60*time.Second, func() bool { return tr.ok.Load() > before+20 })
		// A client WebSocket through the node must not hold its drain up to the deadline.
		ws := dialEcho(t, n, c.actors[0])
		took := n.term(60 * time.Second)
		ws.CloseNow()
		drained := drainLine(n)
		if !strings.Contains(drained, "timed_out=false") {
			t.Errorf("node %s: drain did not finish before its deadline:\n%s", n.id, n.log())
		}
		t.Logf("node %s: SIGTERM to exit %v; %s", n.id, took, drained)
		// Its runners and envoys are on the two other nodes now.
		if h := held(t, n.dbURL, n.id); len(h) != 0 {
			t.Errorf("node %s still holds %d ownership records after its drain", n.id, len(h))
		}
		if n.next != "" {
			n.bin = n.next
		}
		n.start()
	}
	before := tr.ok.Load()
	awaitCond(t, "traffic flowing after the restarts", 60*time.Second, func() bool { return tr.ok.Load() > before+20 })
	tr.finish()
	tr.report(t)
	tr.checkState(t, c)
	return tr
}

// nextVersion is the version stamp of the build TestRollingRestart upgrades to.
const nextVersion = "0.0.0-rolling-upgrade"

// drainLine is the last "berth drained" line of n's log.
func drainLine(n *node) string {
	var last string
	for l := range strings.Lines(string(n.log())) {
		if strings.Contains(l, "berth drained") {
			last = strings.TrimSpace(l)
		}
	}
	return last
}

// TestKillNode kills the node holding the most runner sockets: its runners reconnect to the
// other nodes within their reconnect backoff, every actor answers, and no acknowledged
// increment is lost.
func TestKillNode(t *testing.T) {
	c := startCluster(t, 3, 6, 12)
	killBusiest(t, c)
}

// TestKillNodeEnvoys is TestKillNode with the actors on envoys: the killed node's envoys
// reconnect to the other nodes, which take over their ownership records, and every actor
// answers with no acknowledged increment lost.
func TestKillNodeEnvoys(t *testing.T) {
	c := startCluster(t, 3, 0, 0)
	c.addEnvoys(t, 6, 12)
	killBusiest(t, c)
}

// killBusiest kills the node holding the most sockets under traffic and checks that its
// runners and envoys are held by the other nodes within their reconnect backoff, that
// traffic flows again, and that no request failed after retries and no acknowledged
// increment was lost.
func killBusiest(t *testing.T, c *cluster) {
	t.Helper()
	tr := startTraffic(c, 4)
	before := tr.ok.Load()
	awaitCond(t, "traffic flowing", 60*time.Second, func() bool { return tr.ok.Load() > before+20 })
	victim := c.nodes[0]
	for _, n := range c.nodes {
		if len(held(t, n.dbURL, n.id)) > len(held(t, victim.dbURL, victim.id)) {
			victim = n
		}
	}
	moved := held(t, victim.dbURL, victim.id)
	victim.kill()
	// Backoff 50 ms to 1 s, plus the balancer's health checks: well within 15 s.
	awaitCond(t, "the killed node's runners and envoys on other nodes", 15*time.Second, func() bool {
		for _, h := range moved {
			if !heldElsewhere(t, c, victim, h.Socket) {
				return false
			}
		}
		return true
	})
	before = tr.ok.Load()
	awaitCond(t, "traffic flowing after the kill", 60*time.Second, func() bool { return tr.ok.Load() > before+20 })
	tr.finish()
	tr.report(t)
	tr.checkState(t, c)
	t.Logf("kill: %d sockets moved, %d requests acknowledged, %d failed after retries", len(moved), tr.ok.Load(), tr.failed.Load())
}

func heldElsewhere(t testing.TB, c *cluster, except *node, sock keys.Socket) bool {
	for _, n := range c.nodes {
		if n == except {
			continue
		}
		for _, h := range held(t, n.dbURL, n.id) {
			if h.Socket == sock {
				return true
			}
		}
	}
	return false
}

// seedHeld writes count ownership records naming node into the store at dbURL, as a node
// restarted after a preserve shutdown finds them.
func seedHeld(t testing.TB, dbURL, node string, count int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	db, err := udb.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := 0; i < count; i += 500 {
		if err := udb.Update(ctx, db, func(tx udb.Transaction) error {
			for range min(500, count-i) {
				if _, err := opnode.ClaimSocket(ctx, tx, opnode.ClaimSocketInput{Socket: keys.RunnerSocket(id.New(1)), NodeID: node}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestShutdownReleasesHeld: a node holding 1,000 ownership records (and live runner sockets)
// releases them all on SIGTERM and exits without waiting for its drain deadline.
func TestShutdownReleasesHeld(t *testing.T) {
	dbURL := "file://" + t.TempDir() + "/store"
	seedHeld(t, dbURL, "solo", 990)
	n := newNode(t, "solo", nodeConfig{db: dbURL, env: []string{"BERTH_SHUTDOWN_DRAIN_MS=120000", "BERTH_RELEASES=16"}})
	n.start()
	for i := range 10 {
		startRunner(t, n.url, fmt.Sprintf("runner-%d", i), 10)
	}
	took := n.term(100 * time.Second)
	log := string(n.log())
	for l := range strings.Lines(log) {
		if strings.Contains(l, "berth drained") {
			t.Logf("SIGTERM to exit %v: %s", took, strings.TrimSpace(l))
		}
	}
	if !strings.Contains(log, "timed_out=false") || !strings.Contains(log, "held=0") {
		t.Fatalf("drain did not release everything before its deadline:\n%s", log)
	}
	if h := held(t, dbURL, "solo"); len(h) != 0 {
		t.Fatalf("%d ownership records left after the drain", len(h))
	}
}

// wait waits (up to within) for n's process to exit on its own.
func (n *node) wait(within time.Duration) {
	n.t.Helper()
	n.mu.Lock()
	exited := n.exited
	n.mu.Unlock()
	select {
	case <-exited:
	case <-time.After(within):
		n.t.Fatalf("node %s did not exit within %v", n.id, within)
	}
}

// TestPreserveKeepsOwnership: POST /shutdown?handoff=preserve drains without releasing the
// node's ownership records (runners' and envoys'); the same node restarted at the same
// address gets its runners and envoys back, and a SIGTERM then releases everything. The store
// is PostgreSQL so that the records can be read while the node runs: an envoy is listed
// before its socket's ownership is claimed, in a transaction of its own.
func TestPreserveKeepsOwnership(t *testing.T) {
	dbURL := postgresStore(t)
	n := newNode(t, "keep", nodeConfig{db: dbURL})
	n.start()
	var rs []*runner.Runner
	for i := range 3 {
		rs = append(rs, startRunner(t, n.url, fmt.Sprintf("runner-%d", i), 10))
	}
	ids := make([]string, len(rs))
	for i, r := range rs {
		ids[i] = r.RunnerID()
	}
	// Two envoys too (through a balancer of this one node): their records are kept alike.
	c := &cluster{nodes: []*node{n}, lb: startBalancer(t, []*node{n}), client: newClient(t, []*node{n})}
	c.addEnvoys(t, 2, 0)
	hosts := append(slices.Clone(rs), c.envoys...)
	awaitCond(t, "an ownership record for every runner and envoy", 30*time.Second, func() bool {
		return len(held(t, dbURL, "keep")) == len(hosts)
	})
	resp, err := http.Post(n.peerURL+"/shutdown?handoff=preserve", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /shutdown?handoff=preserve: %d", resp.StatusCode)
	}
	n.wait(60 * time.Second)
	if !strings.Contains(drainLine(n), "mode=preserve") {
		t.Fatalf("no preserve drain in the log:\n%s", n.log())
	}
	if h := held(t, dbURL, "keep"); len(h) != len(hosts) {
		t.Fatalf("%d ownership records after a preserve shutdown, want %d (runners and envoys)", len(h), len(hosts))
	}
	n.start()
	awaitCond(t, "runners and envoys back on the restarted node", 30*time.Second, func() bool {
		for _, r := range hosts {
			if r.State() != runner.StateConnected {
				return false
			}
		}
		return true
	})
	for i, r := range rs {
		if r.RunnerID() != ids[i] {
			t.Errorf("runner %d: id %s after the restart, was %s", i, r.RunnerID(), ids[i])
		}
	}
	n.term(60 * time.Second)
	if h := held(t, dbURL, "keep"); len(h) != 0 {
		t.Fatalf("%d ownership records after the handoff shutdown", len(h))
	}
}
