package hostsock_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"go.uber.org/goleak"

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/ops/namespace"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const label = 1

type env struct {
	db   udb.Database
	node *hostsocktest.Node
	hs   *httptest.Server
}

// start opens a store with the default namespace and serves a node's host sockets on it.
func start(t *testing.T, c hostsocktest.Config) *env {
	t.Helper()
	return startOn(t, mustOpen(t), c)
}

// mustOpen opens an embedded store in memory, closed when t ends.
func mustOpen(t *testing.T) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// startOn is start on the store db.
func startOn(t *testing.T, db udb.Database, c hostsocktest.Config) *env {
	t.Helper()
	ctx := context.Background()
	if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
		return namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(label), NowMs: time.Now().UnixMilli()})
	}); err != nil {
		t.Fatal(err)
	}
	c.Label = label
	node := hostsocktest.Start(t, db, c)
	hs := httptest.NewServer(node.Server.Wrap(http.NotFoundHandler()))
	t.Cleanup(hs.Close)
	return &env{db: db, node: node, hs: hs}
}

func (e *env) url(path string, q url.Values) string {
	return "ws" + strings.TrimPrefix(e.hs.URL, "http") + path + "?" + q.Encode()
}

func query(ns, key string) url.Values {
	return url.Values{"protocol_version": {"7"}, "namespace": {ns}, "runner_key": {key}}
}

func dial(t *testing.T, u string, protocols ...string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if protocols == nil {
		protocols = []string{"rivet"}
	}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: protocols})
	if err == nil {
		t.Cleanup(func() { _ = c.CloseNow() })
	}
	return c, resp, err
}

func send(t *testing.T, c *websocket.Conn, m proto.ToServer) {
	t.Helper()
	b, err := proto.EncodeToServer(m, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		t.Fatal(err)
	}
}

// recv reads the next ToClient message, or returns the close error.
func recv(t *testing.T, c *websocket.Conn) (proto.ToClient, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageBinary {
		t.Fatalf("frame type %v", typ)
	}
	m, err := proto.DecodeToClient(b, 7)
	if err != nil {
		t.Fatal(err)
	}
	return m, nil
}

// waitClose reads until the socket closes and checks the close code and reason prefix.
func waitClose(t *testing.T, c *websocket.Conn, code websocket.StatusCode, prefix string) {
	t.Helper()
	for {
		_, err := recv(t, c)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("read ended with %v, want close %d %s", err, code, prefix)
		}
		if ce.Code != code || !strings.HasPrefix(ce.Reason, prefix+"#") || len(ce.Reason) > 123 {
			t.Fatalf("closed with %d %q, want %d %q#<ray>", ce.Code, ce.Reason, code, prefix)
		}
		if _, err := id.Parse(strings.TrimPrefix(ce.Reason, prefix+"#")); err != nil {
			t.Fatalf("ray id in %q: %v", ce.Reason, err)
		}
		return
	}
}

func initMsg(name string) proto.ToServerInit {
	md := `{"a":1}`
	return proto.ToServerInit{Name: name, Version: 3, TotalSlots: 10, Metadata: &md}
}

// connect opens a socket, sends init and returns the ToClientInit.
func connect(t *testing.T, e *env, name, key string) (*websocket.Conn, proto.ToClientInit) {
	t.Helper()
	c, resp, err := dial(t, e.url("/runners/connect", query("default", key)))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "rivet" {
		t.Fatalf("subprotocol %q, want rivet", got)
	}
	send(t, c, initMsg(name))
	m, err := recv(t, c)
	if err != nil {
		t.Fatal(err)
	}
	ci, ok := m.(proto.ToClientInit)
	if !ok {
		t.Fatalf("got %T, want ToClientInit", m)
	}
	return c, ci
}

func getRunner(t *testing.T, e *env, rid string) oprunner.Runner {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (oprunner.Runner, error) {
		return oprunner.Get(context.Background(), tx, oprunner.GetInput{RunnerID: id.MustParse(rid)})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestInitAndStableRunnerID(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, ci := connect(t, e, "pool", "key-1")
	if _, err := id.Parse(ci.RunnerID); err != nil {
		t.Fatalf("runner id %q: %v", ci.RunnerID, err)
	}
	if ci.Metadata.RunnerLostThreshold != 15000 || ci.Metadata.ActorStopThreshold != 1800000 || ci.Metadata.ServerlessDrainGracePeriod != nil {
		t.Fatalf("metadata %+v", ci.Metadata)
	}
	r := getRunner(t, e, ci.RunnerID)
	if r.Name != "pool" || r.Key != "key-1" || r.TotalSlots != 10 {
		t.Fatalf("runner %+v", r)
	}
	_ = c.Close(websocket.StatusNormalClosure, "pegboard.runner_shutdown")

	// Same (namespace, name, key): same runner id. The trailing-slash path works too.
	c2, resp, err := dial(t, e.url("/runners/connect/", query("default", "key-1")))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp
	send(t, c2, initMsg("pool"))
	m, err := recv(t, c2)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(proto.ToClientInit).RunnerID; got != ci.RunnerID {
		t.Fatalf("reconnect runner id %s, want %s", got, ci.RunnerID)
	}
	// Another key: another runner.
	_, ci3 := connect(t, e, "pool", "key-2")
	if ci3.RunnerID == ci.RunnerID {
		t.Fatal("second key got the same runner id")
	}
}

func TestBadRequests(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	for _, tc := range []struct {
		name   string
		q      url.Values
		reason string
	}{
		{"no protocol_version", url.Values{"namespace": {"default"}, "runner_key": {"k"}}, "ws.invalid_url"},
		{"bad protocol_version", url.Values{"protocol_version": {"x"}, "namespace": {"default"}, "runner_key": {"k"}}, "ws.invalid_url"},
		{"no runner_key", url.Values{"protocol_version": {"7"}, "namespace": {"default"}}, "ws.invalid_url"},
		{"no namespace", url.Values{"protocol_version": {"7"}, "runner_key": {"k"}}, "ws.invalid_url"},
		{"unknown namespace", query("nope", "k"), "namespace.not_found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := dial(t, e.url("/runners/connect", tc.q))
			if err != nil {
				t.Fatal(err)
			}
			waitClose(t, c, websocket.StatusInternalError, tc.reason)
		})
	}
}

func TestBadInitFrames(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	t.Run("garbage", func(t *testing.T) {
		c, _, err := dial(t, e.url("/runners/connect", query("default", "k")))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Write(context.Background(), websocket.MessageBinary, []byte{0xff, 0x01})
		waitClose(t, c, websocket.StatusInternalError, "ws.invalid_packet")
	})
	t.Run("text", func(t *testing.T) {
		c, _, err := dial(t, e.url("/runners/connect", query("default", "k")))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Write(context.Background(), websocket.MessageText, []byte("hi"))
		waitClose(t, c, websocket.StatusInternalError, "ws.invalid_initial_packet")
	})
	t.Run("unsupported version", func(t *testing.T) {
		q := query("default", "k")
		q.Set("protocol_version", "99")
		c, _, err := dial(t, e.url("/runners/connect", q))
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, initMsg("pool"))
		waitClose(t, c, websocket.StatusInternalError, "ws.invalid_packet")
	})
	t.Run("pong before init", func(t *testing.T) {
		c, _, err := dial(t, e.url("/runners/connect", query("default", "k")))
		if err != nil {
			t.Fatal(err)
		}
		send(t, c, proto.ToServerPong{Ts: 1})
		waitClose(t, c, websocket.StatusInternalError, "ws.invalid_initial_packet")
	})
}

func TestInitTimeout(t *testing.T) {
	e := start(t, hostsocktest.Config{InitTimeout: 200 * time.Millisecond})
	c, _, err := dial(t, e.url("/runners/connect", query("default", "k")))
	if err != nil {
		t.Fatal(err)
	}
	waitClose(t, c, websocket.StatusInternalError, "ws.timed_out_waiting_for_init")
}

func TestAuth(t *testing.T) {
	e := start(t, hostsocktest.Config{AdminToken: "secret"})
	u := e.url("/runners/connect", query("default", "k"))
	// A refused token closes the socket at once (1008 and the error's key), before the query
	// is looked at: none here, a good one, a bad one.
	for _, tc := range []struct {
		url    string
		protos []string
		key    string
	}{
		{u, []string{"rivet"}, "api.unauthorized#"},
		{e.url("/runners/connect", nil), []string{"rivet"}, "api.unauthorized#"},
		{e.url("/runners/connect", url.Values{"protocol_version": {"x"}}), []string{"rivet", "rivet_token.wrong"}, "api.forbidden#"},
		{u, []string{"rivet", "rivet_token.wrong"}, "api.forbidden#"},
	} {
		c, _, err := dial(t, tc.url, tc.protos...)
		if err != nil {
			t.Fatalf("%v: %v; want the socket accepted, then closed", tc.protos, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _, err = c.Read(ctx)
		cancel()
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != 1008 || !strings.HasPrefix(ce.Reason, tc.key) {
			t.Fatalf("%s %v: %v; want close 1008 %s<ray>", tc.url, tc.protos, err, tc.key)
		}
	}
	// The x-rivet-token header works too.
	hctx, hcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer hcancel()
	hc, _, err := websocket.Dial(hctx, u, &websocket.DialOptions{Subprotocols: []string{"rivet"}, HTTPHeader: http.Header{"X-Rivet-Token": {"secret"}}})
	if err != nil {
		t.Fatalf("x-rivet-token: %v", err)
	}
	_ = hc.CloseNow()
	c, resp, err := dial(t, u, "rivet", "rivet_token.secret")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "rivet" {
		t.Fatalf("subprotocol %q", got)
	}
	send(t, c, initMsg("pool"))
	if m, err := recv(t, c); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(proto.ToClientInit); !ok {
		t.Fatalf("got %T", m)
	}
}

func TestTargetRouting(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, resp, err := dial(t, e.url("/", query("default", "k")), "rivet_target.runner", "rivet")
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "rivet" {
		t.Fatalf("subprotocol %q", got)
	}
	send(t, c, initMsg("pool"))
	if m, err := recv(t, c); err != nil {
		t.Fatal(err)
	} else if _, ok := m.(proto.ToClientInit); !ok {
		t.Fatalf("got %T", m)
	}
	// Another target, or none, goes to the next handler (404 here).
	for _, protos := range [][]string{{"rivet_target.actor", "rivet"}, {"rivet"}} {
		if _, resp, err := dial(t, e.url("/", query("default", "k")), protos...); err == nil || resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("%v: %v %v, want 404", protos, resp, err)
		}
	}
}
