// Package kvserve runs an actor's KV request (the runner protocol's shape; envoy requests
// are translated by pkg/protocol/bridge) against the store, in one transaction that first
// checks that the asking socket hosts the actor. Shared by the runner and envoy sockets.
package kvserve

import (
	"context"
	"errors"
	"time"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	proto "github.com/berthhq/berth/pkg/protocol/runner"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Hosted checks, inside the request's transaction, that the socket may act for actor aid;
// its reads are serializable, so that a move of the actor committed meanwhile makes the
// transaction retry and fail the check.
type Hosted func(ctx context.Context, r udb.ReadTransaction, aid id.ID) error

// Request is one KV request of actor ActorID.
type Request struct {
	ActorID id.ID
	Data    proto.KvRequestData
	// Version is stored in the metadata of every value written.
	Version []byte
}

// The texts the Rivet engine answers when the actor is not the socket's.
const (
	actorNotFound = "actor does not exist"
	// NotRunners and NotEnvoys are the text for an actor placed on another host.
	NotRunners = "actor does not belong to runner"
	NotEnvoys  = "actor does not belong to envoy"
)

// NotHosted carries one of the texts above out of the transaction; it is answered as a
// KvErrorResponse with that text.
type NotHosted struct{ Msg string }

func (e NotHosted) Error() string { return e.Msg }

// CheckPlaced ends a Hosted check once the socket is known current: nil when the actor is
// placed on the socket's host, else NotHosted: notHere for an actor that exists (placed
// elsewhere, or not at all), "actor does not exist" for one that does not.
func CheckPlaced(ctx context.Context, r udb.ReadTransaction, aid id.ID, placed bool, notHere string) error {
	if placed {
		return nil
	}
	_, exists, err := keys.Get(ctx, r, keys.ActorNamespaceIDKey{ActorID: aid})
	switch {
	case err != nil:
		return err
	case exists:
		return NotHosted{Msg: notHere}
	default:
		return NotHosted{Msg: actorNotFound}
	}
}

// Answer runs one request of actor actorID (as the socket received it) and returns the
// response to send: the result, or a KvErrorResponse for a request the store refused (a
// limit, an actor the host does not hold, an id that does not parse: Rivet answers its
// parse error). stale reports that the socket was replaced by a newer one (its check
// returned a *.stale_connection error): nothing is to be sent, the socket closes with
// ws.eviction. Internal errors are given to logInternal before being answered.
func Answer(ctx context.Context, db udb.Database, hosted Hosted, actorID string, data proto.KvRequestData, version []byte, logInternal func(error)) (resp proto.KvResponseData, stale bool) {
	aid, err := id.Parse(actorID)
	if err == nil {
		resp, err = Serve(ctx, db, hosted, Request{ActorID: aid, Data: data, Version: version})
	} else {
		err = NotHosted{Msg: err.Error()}
	}
	var nh NotHosted
	switch e, ok := rerr.As(err); {
	case err == nil:
		return resp, false
	case ok && e.Code == "stale_connection":
		return nil, true
	case errors.As(err, &nh):
		return proto.KvErrorResponse{Message: nh.Msg}, false
	}
	pub := rerr.Public(err)
	if pub.Key() == "core.internal_error" && logInternal != nil {
		logInternal(err)
	}
	return proto.KvErrorResponse{Message: pub.Message}, false
}

// Serve runs req and returns the response to send on success.
func Serve(ctx context.Context, db udb.Database, hosted Hosted, req Request) (proto.KvResponseData, error) {
	aid := req.ActorID
	switch d := req.Data.(type) {
	case proto.KvGetRequest:
		es, err := read(ctx, db, hosted, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.Get(ctx, r, actorkv.GetInput{ActorID: aid, Keys: d.Keys})
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := lists(es)
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
			return nil, rerr.InvalidInput("unknown list query")
		}
		es, err := read(ctx, db, hosted, aid, func(r udb.ReadTransaction) ([]actorkv.Entry, error) {
			return actorkv.List(ctx, r, in)
		})
		if err != nil {
			return nil, err
		}
		ks, vs, ms := lists(es)
		return proto.KvListResponse{Keys: ks, Values: vs, Metadata: ms}, nil
	case proto.KvPutRequest:
		in := actorkv.PutInput{ActorID: aid, Keys: d.Keys, Values: d.Values, Version: req.Version, NowMs: time.Now().UnixMilli()}
		return proto.KvPutResponse{}, write(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.Put(ctx, tx, in)
		})
	case proto.KvDeleteRequest:
		return proto.KvDeleteResponse{}, write(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.Delete(ctx, tx, actorkv.DeleteInput{ActorID: aid, Keys: d.Keys})
		})
	case proto.KvDeleteRangeRequest:
		// Rivet answers a delete range with KvDeleteResponse (there is no other).
		return proto.KvDeleteResponse{}, write(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			return actorkv.DeleteRange(ctx, tx, actorkv.DeleteRangeInput{ActorID: aid, Start: d.Start, End: d.End})
		})
	case proto.KvDropRequest:
		return proto.KvDropResponse{}, write(ctx, db, hosted, aid, func(tx udb.Transaction) error {
			actorkv.DropAll(tx, aid)
			return nil
		})
	default:
		return nil, rerr.InvalidInput("unknown KV request")
	}
}

func read(ctx context.Context, db udb.Database, hosted Hosted, aid id.ID, f func(r udb.ReadTransaction) ([]actorkv.Entry, error)) ([]actorkv.Entry, error) {
	res, err := db.ReadTransact(ctx, func(r udb.ReadTransaction) (any, error) {
		if err := hosted(ctx, r, aid); err != nil {
			return nil, err
		}
		return f(r)
	})
	if err != nil {
		return nil, err
	}
	return res.([]actorkv.Entry), nil
}

func write(ctx context.Context, db udb.Database, hosted Hosted, aid id.ID, f func(tx udb.Transaction) error) error {
	_, err := db.Transact(ctx, func(tx udb.Transaction) (any, error) {
		if err := hosted(ctx, tx, aid); err != nil {
			return nil, err
		}
		return nil, f(tx)
	})
	return err
}

// lists splits entries into the response's parallel lists.
func lists(es []actorkv.Entry) (ks, vs [][]byte, ms []proto.KvMetadata) {
	ks, vs, ms = make([][]byte, len(es)), make([][]byte, len(es)), make([]proto.KvMetadata, len(es))
	for i, e := range es {
		ks[i], vs[i] = e.Key, e.Value
		ms[i] = proto.KvMetadata{Version: e.Metadata.Version, UpdateTs: e.Metadata.UpdateTs}
	}
	return ks, vs, ms
}
