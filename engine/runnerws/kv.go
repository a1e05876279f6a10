package runnerws

import (
	"context"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/engine/internal/kvserve"
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// KV requests (rivet-protocol.md §3.4). The read loop answers each ToServerKvRequest before it
// reads the next frame, as the Rivet engine does, so responses go out in request order.
const (
	// kvTxnTimeout bounds one request's transaction, retries included.
	kvTxnTimeout = 10 * time.Second
	// kvWriteTimeout bounds the write of one response.
	kvWriteTimeout = 10 * time.Second
)

// kvVersion is Options.Version, or else the build's version (buildVersion).
func (s *Server) kvVersion() []byte {
	if s.o.Version != "" {
		return []byte(s.o.Version)
	}
	return buildVersion()
}

// buildVersion is stored in the metadata of every value written (KvMetadata.version: the
// engine's version string in Rivet). The socket is not told the build's version, so this is
// the main module's version from the build information, or "dev".
var buildVersion = sync.OnceValue(func() []byte {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return []byte(bi.Main.Version)
	}
	return []byte("dev")
})

// kvRequest runs one KV request and writes its ToClientKvResponse. A request the store
// refuses (a limit, an actor this runner does not host) is answered with KvErrorResponse; the
// socket is closed only when the response cannot be written, or when a newer socket of this
// runner took over (ws.eviction, as for a stale pong).
func (c *conn) kvRequest(m proto.ToServerKvRequest) {
	tctx, cancel := context.WithTimeout(c.s.ctx, kvTxnTimeout)
	defer cancel()
	hosted := func(ctx context.Context, r udb.ReadTransaction, aid id.ID) error { return kvHosted(ctx, r, c, aid) }
	data, stale := kvserve.Answer(tctx, c.s.o.DB, hosted, m.ActorID, m.Data, c.s.kvVersion(), func(err error) {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Error("runner socket: kv request", "runner_id", c.runnerID.String(), "actor_id", m.ActorID, "ray_id", c.ray, "error", err)
		}
	})
	if stale {
		c.closeWith(rerr.WS("eviction"), true)
		return
	}
	b, err := proto.EncodeToClient(proto.ToClientKvResponse{RequestID: m.RequestID, Data: data}, c.version)
	if err != nil {
		c.fail(rerr.Internal(err))
		return
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, kvWriteTimeout)
	defer cancel()
	if err := c.ws.Write(ctx, websocket.MessageBinary, b); err != nil {
		c.fail(nil)
	}
}

// kvHosted checks, inside the request's transaction, that this socket is its runner's current
// one (runner.stale_connection otherwise) and that the actor is placed on the runner. The
// reads are serializable: a write that moves the actor away, or a newer socket's
// registration, committed after this transaction read makes it retry and fail the check, so
// KV is never written by a runner that no longer hosts the actor.
func kvHosted(ctx context.Context, r udb.ReadTransaction, c *conn, aid id.ID) error {
	cur, _, err := keys.Get(ctx, r, keys.RunnerConnIDKey{RunnerID: c.runnerID})
	if err != nil {
		return err
	}
	if cur != c.connID {
		return rerr.RunnerStaleConnection(c.runnerID.String())
	}
	_, placed, err := keys.Get(ctx, r, keys.RunnerActorKey{RunnerID: c.runnerID, ActorID: aid})
	if err != nil {
		return err
	}
	return kvserve.CheckPlaced(ctx, r, aid, placed, kvserve.NotRunners)
}
