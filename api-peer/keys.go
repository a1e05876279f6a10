package apipeer

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/keyres"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/auth"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Keys across datacenters: the internal routes engine/pegboard reaches through KeyClient
// (docs/design.md, "Keys across datacenters"). They are engine to engine, for the admin token
// only, and not part of the public contract:
//
//   - POST /internal/keys/reserve, at the leader: ops/keyres.Replace for each reservation;
//   - POST /internal/keys/release, at the leader: ops/keyres.Release for each;
//   - POST /internal/keys/holder, at the leader: ops/keyres.Get of one key;
//   - POST /internal/keys/find, in the datacenter an actor id names: ops/keyres.Look, or with
//     fence keyres.Fence, and the actor when it is live.

// keyJSON is a reservation request or release on the wire.
type keyJSON struct {
	NamespaceID   id.ID  `json:"namespace_id"`
	Name          string `json:"name"`
	Key           string `json:"key"`
	ExpectActorID *id.ID `json:"expect_actor_id,omitempty"` // absent: only a free key
	ActorID       *id.ID `json:"actor_id,omitempty"`        // absent in a release
	ReservedAtMs  int64  `json:"reserved_at_ms"`
}

type keysRequest struct {
	Keys []keyJSON `json:"keys"`
}

type holderJSON struct {
	ActorID      id.ID `json:"actor_id"`
	ReservedAtMs int64 `json:"reserved_at_ms"`
}

type keysResponse struct {
	Holders []holderJSON `json:"holders"`
}

type holderResponse struct {
	Holder *holderJSON `json:"holder"` // null: the key is free
}

type findRequest struct {
	ActorID id.ID `json:"actor_id"`
	Fence   bool  `json:"fence"`
}

type findResponse struct {
	Liveness keyres.Liveness `json:"liveness"`
	Actor    *actor.Actor    `json:"actor,omitempty"`
}

// maxKeysPerCall bounds the reservations or releases of one call.
const maxKeysPerCall = 1024

func toRequests(ks []keyJSON) []keyres.Request {
	out := make([]keyres.Request, len(ks))
	for i, k := range ks {
		out[i] = keyres.Request{Key: keyres.Key{Namespace: k.NamespaceID, Name: k.Name, Key: k.Key}, Expect: idOf(k.ExpectActorID),
			Candidate: keyres.Holder{ActorID: idOf(k.ActorID), ReservedAtMs: k.ReservedAtMs}}
	}
	return out
}

func fromRequests(reqs []keyres.Request) keysRequest {
	out := keysRequest{Keys: make([]keyJSON, len(reqs))}
	for i, r := range reqs {
		out.Keys[i] = keyJSON{NamespaceID: r.Key.Namespace, Name: r.Key.Name, Key: r.Key.Key, ExpectActorID: optID(r.Expect),
			ActorID: optID(r.Candidate.ActorID), ReservedAtMs: r.Candidate.ReservedAtMs}
	}
	return out
}

// optID is aid for JSON, nil for the zero id (which does not parse); idOf the reverse.
func optID(aid id.ID) *id.ID {
	if aid.IsZero() {
		return nil
	}
	return &aid
}

func idOf(p *id.ID) id.ID {
	if p == nil {
		return id.ID{}
	}
	return *p
}

// bindInternal checks an internal call: the admin token, no query, a JSON body.
func bindInternal(c echo.Context, body any) error {
	if err := auth.FromContext(c.Request().Context()).AllowGlobal(); err != nil {
		return err
	}
	if err := apihttp.BindQuery(c, &apihttp.NoQuery{}); err != nil {
		return err
	}
	return apihttp.BindJSON(c, body)
}

func (s *Server) bindKeys(c echo.Context) ([]keyres.Request, error) {
	var body keysRequest
	if err := bindInternal(c, &body); err != nil {
		return nil, err
	}
	if len(body.Keys) > maxKeysPerCall {
		return nil, rerr.BadRequest("keys", "more than 1024")
	}
	return toRequests(body.Keys), s.checkLeader()
}

// reserveKeys serves POST /internal/keys/reserve.
func (s *Server) reserveKeys(c echo.Context) error {
	reqs, err := s.bindKeys(c)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if r.Candidate.ActorID.IsZero() {
			return rerr.BadRequest("keys", "actor_id is required")
		}
	}
	hs, err := replaceKeys(c.Request().Context(), s.deps.DB, reqs)
	if err != nil {
		return err
	}
	out := keysResponse{Holders: make([]holderJSON, len(hs))}
	for i, h := range hs {
		out.Holders[i] = holderJSON(h)
	}
	return c.JSON(http.StatusOK, out)
}

// releaseKeys serves POST /internal/keys/release.
func (s *Server) releaseKeys(c echo.Context) error {
	reqs, err := s.bindKeys(c)
	if err != nil {
		return err
	}
	for _, r := range reqs {
		if r.Expect.IsZero() {
			return rerr.BadRequest("keys", "expect_actor_id is required")
		}
	}
	if err := releaseKeys(c.Request().Context(), s.deps.DB, reqs); err != nil {
		return err
	}
	return c.JSON(http.StatusOK, struct{}{})
}

// keyHolder serves POST /internal/keys/holder.
func (s *Server) keyHolder(c echo.Context) error {
	var body keyJSON
	if err := bindInternal(c, &body); err != nil {
		return err
	}
	if err := s.checkLeader(); err != nil {
		return err
	}
	return holderOf(c.Request().Context(), s.deps.DB, toRequests([]keyJSON{body})[0].Key, func(h holderResponse) error {
		return c.JSON(http.StatusOK, h)
	})
}

// holderOf reads k's holder in db and hands it to answer.
func holderOf(ctx context.Context, db udb.Database, k keyres.Key, answer func(holderResponse) error) error {
	out, err := udb.ReadTransact(ctx, db, func(r udb.ReadTransaction) (holderResponse, error) {
		h, found, err := keyres.Get(ctx, r, k)
		if err != nil || !found {
			return holderResponse{}, err
		}
		return holderResponse{Holder: &holderJSON{ActorID: h.ActorID, ReservedAtMs: h.ReservedAtMs}}, nil
	})
	if err != nil {
		return err
	}
	return answer(out)
}

// findKey serves POST /internal/keys/find, for an actor id of this datacenter.
func (s *Server) findKey(c echo.Context) error {
	var body findRequest
	if err := bindInternal(c, &body); err != nil {
		return err
	}
	if body.ActorID.Label() != s.deps.Topology.Local {
		return rerr.BadRequest("actor_id", "not an id of this datacenter")
	}
	l, a, err := findActor(c.Request().Context(), s.deps.DB, body.ActorID, body.Fence, s.deps.Topology.LocalDatacenter().Name)
	if err != nil {
		return err
	}
	out := findResponse{Liveness: l}
	if l == keyres.Live {
		out.Actor = &a
	}
	return c.JSON(http.StatusOK, out)
}

// replaceKeys runs keyres.Replace for each request in one transaction.
func replaceKeys(ctx context.Context, db udb.Database, reqs []keyres.Request) ([]keyres.Holder, error) {
	return udb.Transact(ctx, db, func(tx udb.Transaction) ([]keyres.Holder, error) {
		out := make([]keyres.Holder, len(reqs))
		for i, r := range reqs {
			h, err := keyres.Replace(ctx, tx, r.Key, r.Expect, r.Candidate)
			if err != nil {
				return nil, err
			}
			out[i] = h
		}
		return out, nil
	})
}

// releaseKeys runs keyres.Release for each request (Expect the holder) in one transaction.
func releaseKeys(ctx context.Context, db udb.Database, reqs []keyres.Request) error {
	return udb.Update(ctx, db, func(tx udb.Transaction) error {
		for _, r := range reqs {
			if _, err := keyres.Release(ctx, tx, r.Key, r.Expect); err != nil {
				return err
			}
		}
		return nil
	})
}

// findActor runs keyres.Look, or with fence keyres.Fence, on actor aid of this store, and
// reads the actor when it is live.
func findActor(ctx context.Context, db udb.Database, aid id.ID, fence bool, dc string) (keyres.Liveness, actor.Actor, error) {
	type found struct {
		l keyres.Liveness
		a actor.Actor
	}
	look := func(tx udb.ReadTransaction) (found, error) {
		l, err := keyres.Look(ctx, tx, aid)
		if err != nil || l != keyres.Live {
			return found{l: l}, err
		}
		a, err := actor.GetOne(ctx, tx, aid, dc)
		return found{l, a}, err
	}
	var f found
	var err error
	if fence {
		f, err = udb.Transact(ctx, db, func(tx udb.Transaction) (found, error) {
			l, err := keyres.Fence(ctx, tx, aid, time.Now().UnixMilli())
			if err != nil || l != keyres.Live {
				return found{l: l}, err
			}
			return look(tx)
		})
	} else {
		f, err = udb.ReadTransact(ctx, db, look)
	}
	return f.l, f.a, err
}

// KeyClient is engine/pegboard's KeyService: the reservations in this store when this
// datacenter is the leader, else through the leader's internal routes; actors of this
// datacenter from this store, others through their datacenter's. Calls carry the engine's
// own token, whatever the request being served presented.
type KeyClient struct {
	DB       udb.Database
	Topology apihttp.Topology
	Peers    *apihttp.PeerClient
}

// post calls path on dc's api-peer with the engine's own token, within three quarters of
// the time ctx has left: a datacenter that does not answer is then reported as such
// (datacenter.unreachable naming it, or actor.key_reservation_unavailable for the leader)
// before the request being served runs out of time itself.
func (c *KeyClient) post(ctx context.Context, dc apihttp.Datacenter, path string, body, out any) error {
	ctx = apihttp.WithoutToken(ctx)
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Now().Add(time.Until(dl)*3/4))
		defer cancel()
	}
	return c.Peers.Post(ctx, dc, path, nil, body, out)
}

// LeaderIsLocal reports whether this datacenter holds the reservations.
func (c *KeyClient) LeaderIsLocal() bool { return c.Topology.LocalDatacenter().IsLeader }

// Leader is the leader datacenter's name.
func (c *KeyClient) Leader() string { return c.Topology.Leader().Name }

// Replace runs keyres.Replace for each request at the leader.
func (c *KeyClient) Replace(ctx context.Context, reqs []keyres.Request) ([]keyres.Holder, error) {
	if c.LeaderIsLocal() {
		return replaceKeys(ctx, c.DB, reqs)
	}
	var out keysResponse
	if err := c.post(ctx, c.Topology.Leader(), "/internal/keys/reserve", fromRequests(reqs), &out); err != nil {
		return nil, err
	}
	if len(out.Holders) != len(reqs) {
		return nil, rerr.Internal(errors.New("api-peer: the leader answered a reservation with the wrong number of holders"))
	}
	hs := make([]keyres.Holder, len(out.Holders))
	for i, h := range out.Holders {
		hs[i] = keyres.Holder(h)
	}
	return hs, nil
}

// Release runs keyres.Release for each request at the leader.
func (c *KeyClient) Release(ctx context.Context, reqs []keyres.Request) error {
	if c.LeaderIsLocal() {
		return releaseKeys(ctx, c.DB, reqs)
	}
	return c.post(ctx, c.Topology.Leader(), "/internal/keys/release", fromRequests(reqs), nil)
}

// Holder returns k's holder at the leader.
func (c *KeyClient) Holder(ctx context.Context, k keyres.Key) (keyres.Holder, bool, error) {
	var out holderResponse
	var err error
	if c.LeaderIsLocal() {
		err = holderOf(ctx, c.DB, k, func(h holderResponse) error { out = h; return nil })
	} else {
		err = c.post(ctx, c.Topology.Leader(), "/internal/keys/holder", fromRequests([]keyres.Request{{Key: k}}).Keys[0], &out)
	}
	if err != nil || out.Holder == nil {
		return keyres.Holder{}, false, err
	}
	return keyres.Holder(*out.Holder), true, nil
}

// Find says what actor aid is in its datacenter, fencing it there with fence if absent.
func (c *KeyClient) Find(ctx context.Context, aid id.ID, fence bool) (keyres.Liveness, actor.Actor, error) {
	dc, ok := c.Topology.ByLabel(aid.Label())
	if !ok {
		return "", actor.Actor{}, rerr.Internal(errors.New("api-peer: a key holder " + aid.String() + " of no datacenter"))
	}
	if c.Topology.IsLocal(dc) {
		return findActor(ctx, c.DB, aid, fence, dc.Name)
	}
	var out findResponse
	if err := c.post(ctx, dc, "/internal/keys/find", findRequest{ActorID: aid, Fence: fence}, &out); err != nil {
		return "", actor.Actor{}, err
	}
	switch out.Liveness {
	case keyres.Live:
		if out.Actor != nil {
			return out.Liveness, *out.Actor, nil
		}
	case keyres.Destroyed, keyres.Absent:
		return out.Liveness, actor.Actor{}, nil
	}
	return "", actor.Actor{}, rerr.DatacenterUnreachable(dc.Name, errors.New("/internal/keys/find: unexpected answer "+string(out.Liveness)))
}
