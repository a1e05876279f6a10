package hostsock

import (
	"context"
	"errors"
	"runtime/debug"
	"sync"
	"time"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// KV requests (docs/protocol.md, "KV"): an actor's KV request, in the runner protocol's
// shape (the envoy adapter translates its own), runs against the store in one transaction
// that first checks that the asking socket hosts the actor. The read loop answers each
// request before it reads the next frame, as the Rivet engine does, so responses go out in
// request order; a request the store refuses (a limit, an actor the host does not hold) is
// answered with KvErrorResponse, and the socket is closed only when a newer socket of its
// host took over (ws.eviction, as for a stale pong).

// kvTimeout bounds one request's transaction, retries included.
const kvTimeout = 10 * time.Second

// kvRequest runs one KV request of actor actorID (as the socket received it) and answers it.
func (c *conn) kvRequest(requestID uint32, actorID string, data proto.KvRequestData) {
	ctx, cancel := context.WithTimeout(c.s.ctx, kvTimeout)
	defer cancel()
	hosted := func(ctx context.Context, r udb.ReadTransaction, aid id.ID) error { return c.p.hosted(ctx, r, c, aid) }
	resp, isStale := answerKV(ctx, c.s.o.DB, hosted, actorID, data, c.s.kvVersion(), func(err error) {
		if c.s.ctx.Err() == nil {
			c.s.o.Log.Error(c.p.info().kind+" socket: kv request", c.logAttrs("actor_id", actorID, "error", err)...)
		}
	})
	if isStale {
		c.closeWith(evicted, true)
		return
	}
	c.reply(kvResponse{requestID: requestID, data: resp})
}

// kvVersion is Options.Version, or else the build's version (buildVersion).
func (s *Server) kvVersion() []byte {
	if s.o.Version != "" {
		return []byte(s.o.Version)
	}
	return buildVersion()
}

// buildVersion is stored in the metadata of every value written (KvMetadata.version: the
// engine's version string in Rivet) when no version is configured: the main module's version
// from the build information, or "dev".
var buildVersion = sync.OnceValue(func() []byte {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return []byte(bi.Main.Version)
	}
	return []byte("dev")
})

// hostedFunc checks, inside the request's transaction, that the socket may act for actor aid;
// its reads are serializable, so that a move of the actor committed meanwhile makes the
// transaction retry and fail the check.
type hostedFunc func(ctx context.Context, r udb.ReadTransaction, aid id.ID) error

// kvQuery is one KV request of actor ActorID.
type kvQuery struct {
	ActorID id.ID
	Data    proto.KvRequestData
	// Version is stored in the metadata of every value written.
	Version []byte
}

// The texts the Rivet engine answers when the actor is not the socket's.
const (
	actorNotFound = "actor does not exist"
	// notRunners and notEnvoys are the texts for an actor placed on another host.
	notRunners = "actor does not belong to runner"
	notEnvoys  = "actor does not belong to envoy"
)

// notHosted carries one of the texts above out of the transaction; it is answered as a
// KvErrorResponse with that text.
type notHosted struct{ Msg string }

func (e notHosted) Error() string { return e.Msg }

// checkPlaced ends a Hosted check once the socket is known current: nil when the actor is
// placed on the socket's host, else notHosted: notHere for an actor that exists (placed
// elsewhere, or not at all), "actor does not exist" for one that does not.
func checkPlaced(ctx context.Context, r udb.ReadTransaction, aid id.ID, placed bool, notHere string) error {
	if placed {
		return nil
	}
	_, exists, err := actor.NamespaceOf(ctx, r, aid)
	switch {
	case err != nil:
		return err
	case exists:
		return notHosted{Msg: notHere}
	default:
		return notHosted{Msg: actorNotFound}
	}
}

// answerKV runs one request of actor actorID (as the socket received it) and returns the
// response to send: the result, or a KvErrorResponse for a request the store refused (a
// limit, an actor the host does not hold, an id that does not parse: Rivet answers its
// parse error). replaced reports that the socket was replaced by a newer one (its check
// returned a *.stale_connection error): nothing is to be sent, the socket closes with
// ws.eviction. Internal errors are given to logInternal before being answered.
func answerKV(ctx context.Context, db udb.Database, hosted hostedFunc, actorID string, data proto.KvRequestData, version []byte, logInternal func(error)) (resp proto.KvResponseData, replaced bool) {
	aid, err := id.Parse(actorID)
	if err == nil {
		resp, err = serveKV(ctx, db, hosted, kvQuery{ActorID: aid, Data: data, Version: version})
	} else {
		err = notHosted{Msg: err.Error()}
	}
	var nh notHosted
	switch {
	case err == nil:
		return resp, false
	case stale(err):
		return nil, true
	case errors.As(err, &nh):
		return proto.KvErrorResponse{Message: nh.Msg}, false
	}
	pub := rerr.Public(err)
	if rerr.Is(pub, rerr.CodeCoreInternalError) && logInternal != nil {
		logInternal(err)
	}
	return proto.KvErrorResponse{Message: pub.Message}, false
}

// serveKV runs req and returns the response to send on success.
func serveKV(ctx context.Context, db udb.Database, hosted hostedFunc, req kvQuery) (proto.KvResponseData, error) {
	aid := req.ActorID
	switch d := req.Data.(type) {
	case proto.KvGetRequest:
		es, err := kvRead(ctx, db, hosted, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.Get(ctx, r, actorkv.GetInput{ActorID: aid, Keys: d.Keys})
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := kvLists(es)
		return proto.KvGetResponse{Keys: ks, Values: vs, Metadata: ms}, nil
	case proto.KvListRequest:
		in := actorkv.ListInput{ActorID: aid, Limit: d.Limit}
		if d.Reverse != nil {
			in.Reverse = *d.Reverse
		}
		switch q := d.Query.(type) {
		case proto.KvListAllQuery:
			in.Query = actorkv.ListAll{}
		case proto.KvListRangeQuery:
			in.Query = actorkv.ListRange{Start: q.Start, End: q.End, Exclusive: q.Exclusive}
		case proto.KvListPrefixQuery:
			in.Query = actorkv.ListPrefix{Prefix: q.Key}
		default:
			return nil, rerr.ValidationInvalidInput("unknown list query")
		}
		es, err := kvRead(ctx, db, hosted, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.List(ctx, r, in)
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := kvLists(es)
		return proto.KvListResponse{Keys: ks, Values: vs, Metadata: ms}, nil
	case proto.KvPutRequest:
		in := actorkv.PutInput{ActorID: aid, Keys: d.Keys, Values: d.Values, Version: req.Version, NowMs: time.Now().UnixMilli()}
		return proto.KvPutResponse{}, kvWrite(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.Put(ctx, tx, in)
		})
	case proto.KvDeleteRequest:
		return proto.KvDeleteResponse{}, kvWrite(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.Delete(ctx, tx, actorkv.DeleteInput{ActorID: aid, Keys: d.Keys})
		})
	case proto.KvDeleteRangeRequest:
		// Rivet answers a delete range with KvDeleteResponse (there is no other).
		return proto.KvDeleteResponse{}, kvWrite(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.DeleteRange(ctx, tx, actorkv.DeleteRangeInput{ActorID: aid, Start: d.Start, End: d.End})
		})
	case proto.KvDropRequest:
		return proto.KvDropResponse{}, kvWrite(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			actorkv.DropAll(tx, aid)
			return nil
		})
	default:
		return nil, rerr.ValidationInvalidInput("unknown KV request")
	}
}

func kvRead(ctx context.Context, db udb.Database, hosted hostedFunc, aid id.ID, f func(r udb.ReadTransaction) ([]actorkv.Entry, error)) ([]actorkv.Entry, error) {
	return udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
		if err := hosted(ctx, r, aid); err != nil {
			return nil, err
		}
		return f(r)
	})
}

func kvWrite(ctx context.Context, db udb.Database, hosted hostedFunc, aid id.ID, f func(tx udb.Transaction) error) error {
	return udb.Update(ctx, db, func(tx udb.Transaction) error {
		if err := hosted(ctx, tx, aid); err != nil {
			return err
		}
		return f(tx)
	})
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
