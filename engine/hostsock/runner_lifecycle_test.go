package hostsock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/hostsock"
	"github.com/berthhq/berth/engine/hostsock/hostsocktest"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/ops/runnerconfig"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

func write(t *testing.T, e *env, f func(tx udb.Transaction) error) {
	t.Helper()
	if err := udb.Update(context.Background(), e.db, f); err != nil {
		t.Fatal(err)
	}
}

// A runner that sends ToServerStopping with no actor on it drains and stops at once: its
// socket closes with 1000 ws.eviction (do not come back), and its key is released.
func TestStoppingStopsIdleRunner(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	c, ci := connect(t, e, "pool", "k")
	send(t, c, proto.ToServerStopping{})
	waitClose(t, c, websocket.StatusNormalClosure, "ws.eviction")
	r := getRunner(t, e, ci.RunnerID)
	if r.DrainTs == nil || r.StopTs == nil || *r.StopTs < *r.DrainTs {
		t.Fatalf("after stopping: drain_ts %v stop_ts %v, want both", r.DrainTs, r.StopTs)
	}
	if _, ci2 := connect(t, e, "pool", "k"); ci2.RunnerID == ci.RunnerID {
		t.Fatal("the stopped runner's key still names it: a reconnect got the same runner id")
	}
}

// A draining runner with actors stays connected until the lost threshold has passed since
// its drain, then stops, closed with ws.eviction.
func TestDrainTimesOut(t *testing.T) {
	e := start(t, hostsocktest.Config{Runner: hostsock.Timing{LostThreshold: 300 * time.Millisecond, PingInterval: 20 * time.Millisecond}})
	c, ci := connect(t, e, "pool", "k")
	rid := id.MustParse(ci.RunnerID)
	write(t, e, func(tx udb.Transaction) error {
		keys.Set(tx, keys.RunnerActorKey{RunnerID: rid, ActorID: id.New(label)}, 1)
		return nil
	})
	send(t, c, proto.ToServerStopping{})
	eventually(t, "drain_ts", func() bool { return getRunner(t, e, ci.RunnerID).DrainTs != nil })
	if r := getRunner(t, e, ci.RunnerID); r.StopTs != nil {
		t.Fatal("a draining runner with an actor stopped at once")
	}
	// It keeps answering pings while it drains, until the server closes it.
	start := time.Now()
	var ce websocket.CloseError
	if err := answerPings(c); !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure || !strings.HasPrefix(ce.Reason, "ws.eviction#") {
		t.Fatalf("the draining runner's socket ended with %v, want 1000 ws.eviction", err)
	}
	r := getRunner(t, e, ci.RunnerID)
	if r.StopTs == nil || *r.StopTs-*r.DrainTs < 300 {
		t.Fatalf("drain_ts %v stop_ts %v: want a stop at least 300 ms after the drain", r.DrainTs, r.StopTs)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("the drain timeout took %v", time.Since(start))
	}
}

// A runner whose socket is gone expires once the lost threshold passes: stopped, key
// released; a runner that keeps answering pings does not.
func TestSilentRunnerExpires(t *testing.T) {
	e := start(t, hostsocktest.Config{Runner: hostsock.Timing{LostThreshold: 300 * time.Millisecond, PingInterval: 20 * time.Millisecond}})
	gone, ciGone := connect(t, e, "pool", "gone")
	alive, ciAlive := connect(t, e, "pool", "alive")
	ended := make(chan error, 1)
	go func() { ended <- answerPings(alive) }()
	_ = gone.CloseNow()
	eventually(t, "the silent runner stopped", func() bool { return getRunner(t, e, ciGone.RunnerID).StopTs != nil })
	// The live runner keeps answering pings for twice the lost threshold more.
	select {
	case err := <-ended:
		t.Fatalf("the pinging runner's socket ended: %v", err)
	case <-time.After(600 * time.Millisecond):
	}
	if r := getRunner(t, e, ciAlive.RunnerID); r.StopTs != nil {
		t.Fatalf("a runner that answered every ping stopped at %d", *r.StopTs)
	}
	if _, ci := connect(t, e, "pool", "gone"); ci.RunnerID == ciGone.RunnerID {
		t.Fatal("an expired runner's key still names it")
	}
	_ = alive.CloseNow()
	<-ended
}

// answerPings answers every ping on c until the socket ends, and returns why it ended.
func answerPings(c *websocket.Conn) error {
	ctx := context.Background()
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			return err
		}
		m, err := proto.DecodeToClient(b, 7)
		if err != nil {
			return err
		}
		if p, ok := m.(proto.ToClientPing); ok {
			pong, _ := proto.EncodeToServer(proto.ToServerPong{Ts: p.Ts}, 7)
			if err := c.Write(ctx, websocket.MessageBinary, pong); err != nil {
				return err
			}
		}
	}
}

// The first runner of a pool gets the pool's default config before its init is answered;
// with drain_on_version_upgrade, a newer version drains the older runners of the pool.
func TestPoolConfigAndVersionUpgradeDrain(t *testing.T) {
	e := start(t, hostsocktest.Config{})
	_, _ = connect(t, e, "plain", "k")
	ns := defaultNamespace(t, e)
	if cfg := getConfig(t, e, ns, "plain"); cfg.Normal == nil || cfg.Common().DrainOnVersionUpgrade {
		t.Fatalf("auto-created config %+v, want the default normal one", cfg)
	}

	upgrade := runnerconfig.DefaultNormal()
	upgrade.Normal.DrainOnVersionUpgrade = true
	write(t, e, func(tx udb.Transaction) error {
		_, err := runnerconfig.Upsert(context.Background(), tx, runnerconfig.UpsertInput{Namespace: ns, Name: "pool", Config: upgrade})
		return err
	})
	old, ciOld := connect(t, e, "pool", "a") // initMsg is version 3
	sameVersion, _ := connect(t, e, "pool", "b")
	newer, ciNew := connectVersion(t, e, "pool", "c", 4)
	waitClose(t, old, websocket.StatusNormalClosure, "ws.eviction")
	if r := getRunner(t, e, ciOld.RunnerID); r.DrainTs == nil || r.StopTs == nil {
		t.Fatalf("older runner after the upgrade: drain_ts %v stop_ts %v", r.DrainTs, r.StopTs)
	}
	if r := getRunner(t, e, ciNew.RunnerID); r.DrainTs != nil {
		t.Fatal("the new version drained itself")
	}
	// Runners of version 3 other than the drained one: all of them drained, since 3 < 4.
	waitClose(t, sameVersion, websocket.StatusNormalClosure, "ws.eviction")
	send(t, newer, proto.ToServerPong{Ts: time.Now().UnixMilli()})
}

// Every runner of a serverless pool is told the serverless drain grace period at init, as
// on Rivet (whether or not a GET /start started it); runners of a normal pool are not.
func TestServerlessRunnerToldDrainGrace(t *testing.T) {
	for _, c := range []struct {
		grace time.Duration
		want  int64
	}{{0, 10000}, {7 * time.Second, 7000}} {
		e := start(t, hostsocktest.Config{ServerlessDrainGrace: c.grace})
		ns := defaultNamespace(t, e)
		sl, err := runnerconfig.ParseRequest([]byte(`{"serverless":{"url":"http://app.example/api","request_lifespan":3600,"drain_grace_period":30}}`), "", 0)
		if err != nil {
			t.Fatal(err)
		}
		write(t, e, func(tx udb.Transaction) error {
			_, err := runnerconfig.Upsert(context.Background(), tx, runnerconfig.UpsertInput{Namespace: ns, Name: "sl", Config: sl})
			return err
		})
		_, ci := connect(t, e, "sl", "k")
		if g := ci.Metadata.ServerlessDrainGracePeriod; g == nil || *g != c.want {
			t.Fatalf("grace %v: serverlessDrainGracePeriod %v, want %d", c.grace, g, c.want)
		}
		if _, ci := connect(t, e, "plain", "k2"); ci.Metadata.ServerlessDrainGracePeriod != nil {
			t.Fatalf("a runner of a normal pool was told %d", *ci.Metadata.ServerlessDrainGracePeriod)
		}
	}
}

func defaultNamespace(t *testing.T, e *env) id.ID {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (namespace.Namespace, error) {
		return namespace.ResolveByName(context.Background(), tx, namespace.ResolveByNameInput{Name: "default"})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.NamespaceID
}

func getConfig(t *testing.T, e *env, ns id.ID, name string) keys.RunnerConfig {
	t.Helper()
	res, err := udb.ReadTransact(context.Background(), e.db, func(tx udb.ReadTransaction) (runnerconfig.Entry, error) {
		return runnerconfig.Get(context.Background(), tx, runnerconfig.GetInput{Namespace: ns, Name: name})
	})
	if err != nil {
		t.Fatal(err)
	}
	return res.Config
}

// connectVersion is connect with another runner version.
func connectVersion(t *testing.T, e *env, name, key string, version uint32) (*websocket.Conn, proto.ToClientInit) {
	t.Helper()
	c, _, err := dial(t, e.url("/runners/connect", query("default", key)))
	if err != nil {
		t.Fatal(err)
	}
	m := initMsg(name)
	m.Version = version
	send(t, c, m)
	got, err := recv(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return c, got.(proto.ToClientInit)
}
