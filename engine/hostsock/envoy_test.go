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

	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	openvoy "github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

const pool = "default"

type envoyEnv struct {
	db   udb.Database
	ns   id.ID
	node *hostsocktest.Node
	hs   *httptest.Server
}

// startEnvoys opens a store with the default namespace and a runner config for pool, and
// serves a node's host sockets on it.
func startEnvoys(t *testing.T, c hostsocktest.Config) *envoyEnv {
	t.Helper()
	return startEnvoysOn(t, mustOpen(t), c)
}

// startEnvoysOn is startEnvoys on the store db.
func startEnvoysOn(t *testing.T, db udb.Database, c hostsocktest.Config) *envoyEnv {
	t.Helper()
	ctx := context.Background()
	res, err := udb.Transact(ctx, db, func(tx udb.Transaction) (id.ID, error) {
		ns, err := namespace.EnsureDefault(ctx, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(label), NowMs: time.Now().UnixMilli()})
		if err != nil {
			return id.ID{}, err
		}
		_, err = runnerconfig.Ensure(ctx, tx, runnerconfig.EnsureInput{Namespace: ns.Namespace.NamespaceID, Name: pool})
		return ns.Namespace.NamespaceID, err
	})
	if err != nil {
		t.Fatal(err)
	}
	e := &envoyEnv{db: db, ns: res}
	e.node, e.hs = serveEnvoys(t, db, c)
	return e
}

// serveEnvoys runs another node's host sockets on db.
func serveEnvoys(t *testing.T, db udb.Database, c hostsocktest.Config) (*hostsocktest.Node, *httptest.Server) {
	t.Helper()
	c.Label = label
	node := hostsocktest.Start(t, db, c)
	hs := httptest.NewServer(node.Server.Wrap(http.NotFoundHandler()))
	t.Cleanup(hs.Close)
	return node, hs
}

func wsURL(hs *httptest.Server, q url.Values) string {
	return "ws" + strings.TrimPrefix(hs.URL, "http") + "/envoys/connect?" + q.Encode()
}

func envoyQuery(key string) url.Values {
	return url.Values{"protocol_version": {"8"}, "namespace": {"default"}, "pool_name": {pool}, "envoy_key": {key}, "version": {"3"}}
}

type sock struct {
	t *testing.T
	c *websocket.Conn
}

func dialEnvoy(t *testing.T, u string, protocols ...string) (*sock, *http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if protocols == nil {
		protocols = []string{"rivet"}
	}
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: protocols})
	if err != nil {
		return nil, resp, err
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return &sock{t: t, c: c}, resp, nil
}

func (s *sock) send(m proto.ToRivet) {
	s.t.Helper()
	b, err := proto.EncodeToRivet(m, 8)
	if err != nil {
		s.t.Fatal(err)
	}
	if err := s.c.Write(context.Background(), websocket.MessageBinary, b); err != nil {
		s.t.Fatal(err)
	}
}

// recv reads the next message, or returns the close error.
func (s *sock) recv() (proto.ToEnvoy, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	typ, b, err := s.c.Read(ctx)
	if err != nil {
		return nil, err
	}
	if typ != websocket.MessageBinary {
		s.t.Fatalf("frame type %v", typ)
	}
	m, err := proto.DecodeToEnvoy(b, 8)
	if err != nil {
		s.t.Fatal(err)
	}
	return m, nil
}

// nextEnvoy reads messages, skipping pings, until one of type T.
func nextEnvoy[T proto.ToEnvoy](s *sock) T {
	s.t.Helper()
	for {
		m, err := s.recv()
		if err != nil {
			s.t.Fatalf("waiting for %T: %v", *new(T), err)
		}
		if v, ok := m.(T); ok {
			return v
		}
		if _, ok := m.(proto.ToEnvoyPing); !ok {
			s.t.Fatalf("got %#v, waiting for %T", m, *new(T))
		}
	}
}

// closed reads until the socket closes and checks the close code and reason
// ("group.code#<ray id>"). Pings on the way are not answered.
func (s *sock) closed(code websocket.StatusCode, key string) {
	s.t.Helper()
	for {
		_, err := s.recv()
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			s.t.Fatalf("read ended with %v, want close %d %s", err, code, key)
		}
		if ce.Code != code || !strings.HasPrefix(ce.Reason, key+"#") {
			s.t.Fatalf("closed with %d %q, want %d %q#<ray>", ce.Code, ce.Reason, code, key)
		}
		if _, err := id.Parse(strings.TrimPrefix(ce.Reason, key+"#")); err != nil {
			s.t.Fatalf("ray id in %q: %v", ce.Reason, err)
		}
		return
	}
}

// connectEnvoy opens a socket for envoy key, checks that ToEnvoyInit comes first, sends the
// envoy's metadata and waits until the envoy is registered under a new connection.
func connectEnvoy(t *testing.T, e *envoyEnv, hs *httptest.Server, key string) (*sock, proto.ToEnvoyInit) {
	t.Helper()
	before := envoyConnID(t, e, key)
	s, _, err := dialEnvoy(t, wsURL(hs, envoyQuery(key)))
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.recv()
	if err != nil {
		t.Fatal(err)
	}
	init, ok := m.(proto.ToEnvoyInit)
	if !ok {
		t.Fatalf("first message %#v, want ToEnvoyInit", m)
	}
	md := `{"host":"a"}`
	s.send(proto.ToRivetMetadata{Metadata: &md})
	eventually(t, "registration", func() bool { c := envoyConnID(t, e, key); return !c.IsZero() && c != before })
	return s, init
}

func envoyConnID(t *testing.T, e *envoyEnv, key string) id.ID {
	t.Helper()
	v, _ := read(t, e, keys.EnvoyConnIDKey{Namespace: e.ns, EnvoyKey: key})
	return v
}

func read[V any](t *testing.T, e *envoyEnv, k keys.Key[V]) (V, bool) {
	t.Helper()
	type out struct {
		v  V
		ok bool
	}
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (out, error) {
		v, ok, err := keys.Get(context.Background(), tx, k)
		return out{v, ok}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.v, res.ok
}

func get(t *testing.T, e *envoyEnv, key string) openvoy.Envoy {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (openvoy.Envoy, error) {
		return openvoy.Get(context.Background(), tx, openvoy.GetInput{Namespace: e.ns, EnvoyKey: key, Datacenter: "dc"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// lbEntries is the pool's load-balancer index.
func lbEntries(t *testing.T, e *envoyEnv) []keys.EnvoyLoadBalancerIdxKey {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) ([]udb.KeyValue, error) {
		b, en := keys.EnvoyLoadBalancerIdxKeyRange(e.ns, pool)
		return tx.GetRange(udb.FirstGreaterOrEqual(b), udb.FirstGreaterOrEqual(en), udb.RangeOptions{}).All(context.Background())
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []keys.EnvoyLoadBalancerIdxKey
	for _, kv := range res {
		k, err := keys.UnpackEnvoyLoadBalancerIdxKey(kv.Key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// active lists the namespace's active envoy keys.
func active(t *testing.T, e *envoyEnv) []string {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (openvoy.ListOutput, error) {
		return openvoy.List(context.Background(), tx, openvoy.ListInput{Namespace: e.ns})
	})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, v := range res.Envoys {
		out = append(out, v.EnvoyKey)
	}
	return out
}

func expired(t *testing.T, e *envoyEnv, key string) bool {
	t.Helper()
	_, ok := read(t, e, keys.EnvoyExpiredTsKey{Namespace: e.ns, EnvoyKey: key})
	return ok
}

func keysProtocolVersion(e *envoyEnv, key string) keys.EnvoyProtocolVersionKey {
	return keys.EnvoyProtocolVersionKey{Namespace: e.ns, EnvoyKey: key}
}
