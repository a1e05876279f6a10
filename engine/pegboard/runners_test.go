package pegboard

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/berthhq/berth/ops/actor"
	oprunner "github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// closed records the sockets the lifecycle closes.
type closed struct {
	mu   sync.Mutex
	seen map[id.ID]rerr.Code
}

func (c *closed) CloseSocket(h actor.Host, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen[h.RunnerID] = rerr.CodeOf(err)
}

func (c *closed) SendCommands(actor.Host, []actor.Command) {}

func (c *closed) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// For one lost threshold after the node starts, runners are measured from the start, so
// that they get that long to reconnect after an engine restart.
func TestCutoffGrace(t *testing.T) {
	start := time.UnixMilli(1_000_000)
	p := &Runners{loop: scanLoop{lost: 15 * time.Second, started: start}}
	for _, tc := range []struct {
		since time.Duration
		want  int64
	}{
		{0, start.Add(-15 * time.Second).UnixMilli()},
		{14 * time.Second, start.Add(-15 * time.Second).UnixMilli()},
		{15 * time.Second, start.UnixMilli()},
		{20 * time.Second, start.Add(5 * time.Second).UnixMilli()},
	} {
		if got := p.loop.cutoff(start.Add(tc.since)); got != tc.want {
			t.Errorf("cutoff %v after start = %d, want %d", tc.since, got, tc.want)
		}
	}
}

// The loop expires every silent runner, more than one scan batch of them, and closes their
// sockets with ws.eviction.
func TestLoopExpiresManyRunners(t *testing.T) {
	ctx := context.Background()
	db, err := udb.Open(ctx, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ns := id.New(1)
	const n = scanBatch + 44
	old := time.Now().Add(-time.Hour).UnixMilli()
	for range n {
		in := oprunner.RegisterInput{Namespace: ns, Name: "pool", Key: id.New(1).String(),
			Version: 1, TotalSlots: 1, ProtocolVersion: 7, ConnID: id.New(1), NewRunnerID: id.New(1), NowMs: old}
		if _, err := udb.Transact(ctx, db, func(tx udb.Transaction) (oprunner.RegisterOutput, error) { return oprunner.Register(ctx, tx, in) }); err != nil {
			t.Fatal(err)
		}
	}
	sockets := &closed{seen: map[id.ID]rerr.Code{}}
	p := NewRunners(RunnersOptions{DB: db, Hosts: sockets, Log: quiet, LostThreshold: 50 * time.Millisecond,
		Actors: NewActors(ActorsOptions{DB: db, Hosts: sockets, Watchers: NewWatchers(), Log: quiet, Config: actor.DefaultConfig()})})
	loopCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(loopCtx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	deadline := time.Now().Add(10 * time.Second)
	for sockets.count() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := sockets.count(); got != n {
		t.Fatalf("%d of %d silent runners expired", got, n)
	}
	left, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]id.ID, error) {
		return oprunner.ListUnpingedSince(ctx, r, 1<<62, 0)
	})
	if err != nil || len(left) != 0 {
		t.Fatalf("runners left in the ping index: %v, %v", left, err)
	}
	for rid, why := range sockets.seen {
		if why != rerr.CodeWSEviction {
			t.Fatalf("runner %s closed with %s, want ws.eviction", rid, why)
		}
	}
}
