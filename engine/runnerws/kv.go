package runnerws

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
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

// The texts the Rivet engine answers when the actor is not this runner's.
const (
	kvActorNotFound   = "actor does not exist"
	kvActorNotRunners = "actor does not belong to runner"
)

// errKVNotHosted carries one of the texts above out of the transaction.
type errKVNotHosted struct{ msg string }

func (e errKVNotHosted) Error() string { return e.msg }

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
	data, err := c.kvRun(m)
	switch {
	case err == nil:
	case rerr.Is(err, "runner", "stale_connection"):
		c.closeWith(rerr.WS("eviction"), true)
		return
	default:
		var nh errKVNotHosted
		if errors.As(err, &nh) {
			data = proto.KvErrorResponse{Message: nh.msg}
			break
		}
		pub := rerr.Public(err)
		if pub.Key() == "core.internal_error" && c.s.ctx.Err() == nil {
			c.s.o.Log.Error("runner socket: kv request", "runner_id", c.runnerID.String(), "actor_id", m.ActorID, "ray_id", c.ray, "error", err)
		}
		data = proto.KvErrorResponse{Message: pub.Message}
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

// kvRun runs the request in one transaction with the host check, and returns the response
// to send on success.
func (c *conn) kvRun(m proto.ToServerKvRequest) (proto.KvResponseData, error) {
	aid, err := id.Parse(m.ActorID)
	if err != nil {
		return nil, errKVNotHosted{msg: err.Error()} // Rivet answers the id's parse error
	}
	ctx, cancel := context.WithTimeout(c.s.ctx, kvTxnTimeout)
	defer cancel()
	db := c.s.o.DB
	switch req := m.Data.(type) {
	case proto.KvGetRequest:
		es, err := kvRead(ctx, db, c, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.Get(ctx, r, actorkv.GetInput{ActorID: aid, Keys: req.Keys})
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := kvLists(es)
		return proto.KvGetResponse{Keys: ks, Values: vs, Metadata: ms}, nil
	case proto.KvListRequest:
		in := actorkv.ListInput{ActorID: aid, Limit: req.Limit}
		if req.Reverse != nil {
			in.Reverse = *req.Reverse
		}
		switch q := req.Query.(type) {
		case proto.KvListAllQuery:
			in.Query = actorkv.ListAll{}
		case proto.KvListRangeQuery:
			in.Query = actorkv.ListRange{Start: q.Start, End: q.End, Exclusive: q.Exclusive}
		case proto.KvListPrefixQuery:
			in.Query = actorkv.ListPrefix{Prefix: q.Key}
		default:
			return nil, rerr.InvalidInput("unknown list query")
		}
		es, err := kvRead(ctx, db, c, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.List(ctx, r, in)
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := kvLists(es)
		return proto.KvListResponse{Keys: ks, Values: vs, Metadata: ms}, nil
	case proto.KvPutRequest:
		in := actorkv.PutInput{ActorID: aid, Keys: req.Keys, Values: req.Values, Version: c.s.kvVersion(), NowMs: time.Now().UnixMilli()}
		return proto.KvPutResponse{}, kvWrite(ctx, db, c, aid, func(tx udb.Transaction) error {
			return actorkv.Put(ctx, tx, in)
		})
	case proto.KvDeleteRequest:
		return proto.KvDeleteResponse{}, kvWrite(ctx, db, c, aid, func(tx udb.Transaction) error {
			return actorkv.Delete(ctx, tx, actorkv.DeleteInput{ActorID: aid, Keys: req.Keys})
		})
	case proto.KvDeleteRangeRequest:
		// Rivet answers a delete range with KvDeleteResponse (there is no other).
		return proto.KvDeleteResponse{}, kvWrite(ctx, db, c, aid, func(tx udb.Transaction) error {
			return actorkv.DeleteRange(ctx, tx, actorkv.DeleteRangeInput{ActorID: aid, Start: req.Start, End: req.End})
		})
	case proto.KvDropRequest:
		return proto.KvDropResponse{}, kvWrite(ctx, db, c, aid, func(tx udb.Transaction) error {
			actorkv.DropAll(tx, aid)
			return nil
		})
	default:
		return nil, rerr.InvalidInput("unknown KV request")
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
	if err != nil || placed {
		return err
	}
	_, exists, err := keys.Get(ctx, r, keys.ActorNamespaceIDKey{ActorID: aid})
	switch {
	case err != nil:
		return err
	case exists:
		return errKVNotHosted{msg: kvActorNotRunners}
	default:
		return errKVNotHosted{msg: kvActorNotFound}
	}
}

func kvRead(ctx context.Context, db udb.Database, c *conn, aid id.ID, f func(r udb.ReadTransaction) ([]actorkv.Entry, error)) ([]actorkv.Entry, error) {
	res, err := db.ReadTransact(ctx, func(r udb.ReadTransaction) (any, error) {
		if err := kvHosted(ctx, r, c, aid); err != nil {
			return nil, err
		}
		return f(r)
	})
	if err != nil {
		return nil, err
	}
	return res.([]actorkv.Entry), nil
}

func kvWrite(ctx context.Context, db udb.Database, c *conn, aid id.ID, f func(tx udb.Transaction) error) error {
	_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		if err := kvHosted(ctx, tx, c, aid); err != nil {
			return nil, err
		}
		return nil, f(tx)
	})
	return err
}

// kvLists splits entries into the response's parallel lists.
func kvLists(es []actorkv.Entry) (ks, vs [][]byte, ms []proto.KvMetadata) {
	ks, vs, ms = make([][]byte, len(es)), make([][]byte, len(es)), make([]proto.KvMetadata, len(es))
	for i, e := range es {
		ks[i], vs[i] = e.Key, e.Value
		ms[i] = proto.KvMetadata{Version: e.Metadata.Version, UpdateTs: e.Metadata.UpdateTs}
	}
	return ks, vs, ms
}
