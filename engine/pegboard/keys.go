package pegboard

import (
	"context"
	"errors"
	"strconv"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/berthhq/berth/ops/actor"
	"github.com/berthhq/berth/ops/keyres"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Keys across datacenters (docs/design.md, "Keys across datacenters"). With several
// datacenters, a keyed create or get-or-create first looks for the key's actor without the
// leader (this datacenter's key index, then the cache of other datacenters' holders); a new
// key is then reserved at the leader for the actor about to be created here (in the create's
// own transaction when this datacenter is the leader), and the actor is created only if the
// reservation is its own. A key reserved for another actor is settled in that actor's
// datacenter: live, it is the answer; destroyed, or fenced while absent, its reservation is
// replaced; absent but reserved within ReservationGrace, its creator is waited for.

// KeyService reaches the key reservations, the actors and the pools of every datacenter
// (api-peer's KeyClient). Engines of a single datacenter have none, and create as before.
type KeyService interface {
	// LeaderIsLocal reports whether this datacenter's store holds the reservations.
	LeaderIsLocal() bool
	// Leader is the leader datacenter's name, for errors.
	Leader() string
	// Replace runs ops/keyres.Replace at the leader for each request, in one call, and
	// returns the holders in order.
	Replace(ctx context.Context, reqs []keyres.Request) ([]keyres.Holder, error)
	// Release runs ops/keyres.Release at the leader for each request (its Expect the holder).
	Release(ctx context.Context, reqs []keyres.Request) error
	// Find says what actor aid is in its datacenter (ops/keyres.Look, or with fence
	// keyres.Fence) and returns the actor when it is live.
	Find(ctx context.Context, aid id.ID, fence bool) (keyres.Liveness, actor.Actor, error)
	// Holder returns the holder of k at the leader, found false when k is free.
	Holder(ctx context.Context, k keyres.Key) (keyres.Holder, bool, error)

	// Capacities asks every other datacenter, in topology order, what its pool offers a new
	// actor; those that fail or do not answer soon are left out (placement.go).
	Capacities(ctx context.Context, ns id.ID, pool string) []actor.DatacenterCapacity
	// CreateIn creates in's actor (getOrCreate: or gets its key's) in datacenter dc, pinned
	// there.
	CreateIn(ctx context.Context, dc string, in actor.CreateInput, getOrCreate bool) (actor.Actor, bool, error)
}

// ReservationGrace is how long a reservation whose actor does not exist yet is left to its
// creator before another datacenter fences the actor's id and takes the key over. A creator
// needs one create transaction after its reservation, normally milliseconds; only one that
// crashed, hung or lost its datacenter in between is fenced. Datacenters' clocks are assumed
// to be within a second of each other.
const ReservationGrace = 5 * time.Second

const (
	// keyCacheSize bounds the cache of other datacenters' key holders.
	keyCacheSize = 100_000
	// keyWaitMin and keyWaitMax bound the backoff while a holder's creator is in flight.
	keyWaitMin = 20 * time.Millisecond
	keyWaitMax = 500 * time.Millisecond
	// releaseQueue bounds the releases waiting to be sent; more are dropped (a reservation
	// of a destroyed actor is replaced by the next create of its key anyway).
	releaseQueue = 4096
	// migrateBatch is how many keys of existing actors one call reserves at start.
	migrateBatch = 256
)

// pendingCreate is what settle reports of a holder that does not exist yet and is still
// within its grace.
const pendingCreate keyres.Liveness = "pending"

// globalKeys is the state of keys across datacenters.
type globalKeys struct {
	svc      KeyService
	holders  *lru.Cache[keyres.Key, id.ID] // other datacenters' live holders, as last seen
	releases chan release
}

// release asks for the reservation of a destroyed actor (key nil: read from its record) or
// of an id that was reserved and not created to be freed.
type release struct {
	aid id.ID
	key *keyres.Key
}

func newGlobalKeys(svc KeyService) *globalKeys {
	if svc == nil {
		return nil
	}
	holders, _ := lru.New[keyres.Key, id.ID](keyCacheSize)
	return &globalKeys{svc: svc, holders: holders, releases: make(chan release, releaseQueue)}
}

// keyed creates (or with getOrCreate gets) the actor of a key across datacenters.
func (p *Actors) keyed(ctx context.Context, in actor.CreateInput, getOrCreate bool) (actor.Actor, bool, error) {
	if err := actor.CheckCreate(in); err != nil {
		return actor.Actor{}, false, err
	}
	k := keyres.Key{Namespace: in.Namespace, Name: in.Name, Key: *in.Key}
	if a, found, err := p.existing(ctx, k); err != nil || found {
		if found && !getOrCreate {
			return actor.Actor{}, false, rerr.ActorDuplicateKey(k.Key, a.ActorID.String())
		}
		return a, false, err
	}
	if a, created, moved, err := p.createElsewhere(ctx, in, getOrCreate); err != nil || moved {
		if err == nil {
			p.remember(k, a.ActorID)
		}
		return a, created, err
	}
	in.Reserved = true
	var expect id.ID
	wait := keyWaitMin
	for {
		c, err := p.claim(ctx, in, k, expect, getOrCreate)
		if errors.Is(err, actor.ErrFenced) {
			// Our reservation was taken over while we were slow: start again as a new actor.
			in.ActorID, expect = id.New(p.o.Label), id.ID{}
			continue
		}
		if err != nil || c.done {
			return c.actor, c.created, err
		}
		expect = id.ID{}
		l, a, err := p.settle(ctx, c.holder)
		if err != nil {
			return actor.Actor{}, false, err
		}
		switch l {
		case keyres.Live:
			p.remember(k, a.ActorID)
			if !getOrCreate {
				return actor.Actor{}, false, rerr.ActorDuplicateKey(k.Key, a.ActorID.String())
			}
			return a, false, nil
		case keyres.Destroyed, keyres.Absent: // gone for good, or fenced: take the key over
			p.keys.holders.Remove(k)
			expect = c.holder.ActorID
			continue
		}
		select { // its creator is in flight
		case <-ctx.Done():
			return actor.Actor{}, false, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, keyWaitMax)
	}
}

// GetByKey returns the live actor holding key in (namespace, name), found false when there
// is none: in this datacenter's index, else (several datacenters) wherever it lives, through
// the cache of holders, else the leader's reservation.
func (p *Actors) GetByKey(ctx context.Context, ns id.ID, name, key string) (actor.Actor, bool, error) {
	k := keyres.Key{Namespace: ns, Name: name, Key: key}
	if p.keys == nil {
		return p.localByKey(ctx, k)
	}
	if a, found, err := p.existing(ctx, k); err != nil || found {
		return a, found, err
	}
	h, held, err := p.keys.svc.Holder(ctx, k)
	if err != nil {
		return actor.Actor{}, false, p.leaderError(err)
	}
	if !held {
		return actor.Actor{}, false, nil
	}
	l, a, err := p.keys.svc.Find(ctx, h.ActorID, false)
	if err != nil || l != keyres.Live {
		return actor.Actor{}, false, err
	}
	p.remember(k, a.ActorID)
	return a, true, nil
}

// localByKey returns the live actor holding k in this datacenter's index.
func (p *Actors) localByKey(ctx context.Context, k keyres.Key) (actor.Actor, bool, error) {
	out, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) (actor.ListOutput, error) {
		return actor.List(ctx, r, actor.ListInput{Namespace: k.Namespace, Name: k.Name, Key: &k.Key, Limit: 1, Datacenter: p.o.Datacenter})
	})
	if err != nil || len(out.Actors) == 0 {
		return actor.Actor{}, false, err
	}
	return out.Actors[0], true, nil
}

// leaderError explains a call to the leader that got no answer: new keys are unavailable.
func (p *Actors) leaderError(err error) error {
	if rerr.Is(err, rerr.CodeDatacenterUnreachable) {
		return rerr.ActorKeyReservationUnavailable(p.keys.svc.Leader()).WithCause(err)
	}
	return err
}

// existing returns the live actor holding k without asking the leader: from this
// datacenter's key index, else from the datacenter of the cached holder.
func (p *Actors) existing(ctx context.Context, k keyres.Key) (actor.Actor, bool, error) {
	if a, found, err := p.localByKey(ctx, k); err != nil || found {
		return a, found, err
	}
	aid, cached := p.keys.holders.Get(k)
	if !cached {
		return actor.Actor{}, false, nil
	}
	l, a, err := p.keys.svc.Find(ctx, aid, false)
	if err != nil || l == keyres.Live {
		return a, err == nil, err
	}
	p.keys.holders.Remove(k)
	return actor.Actor{}, false, nil
}

func firstActor(as []actor.Actor) actor.Actor {
	if len(as) == 0 {
		return actor.Actor{}
	}
	return as[0]
}

// remember caches aid as k's holder when it lives in another datacenter.
func (p *Actors) remember(k keyres.Key, aid id.ID) {
	if aid.Label() != p.o.Label {
		p.keys.holders.Add(k, aid)
	}
}

// claimed is the outcome of one claim: the actor (done), or the other actor holding the key.
type claimed struct {
	done    bool
	actor   actor.Actor
	created bool
	holder  keyres.Holder
}

// claim reserves k for in.ActorID, replacing expect (zero: only a free key), and creates the
// actor here if the reservation is its own. In the leader both happen in one transaction;
// elsewhere the reservation is one call to the leader, then the create.
func (p *Actors) claim(ctx context.Context, in actor.CreateInput, k keyres.Key, expect id.ID, getOrCreate bool) (claimed, error) {
	cand := keyres.Holder{ActorID: in.ActorID, ReservedAtMs: now()}
	if p.keys.svc.LeaderIsLocal() {
		res, err := p.creates.do(ctx, len(in.Input), actor.CreateReads(in), func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error) {
			// Reads first, then the create (whose client errors come before its writes),
			// then the reservation: a batch carries on without an op that failed.
			cur, found, err := keyres.Get(ctx, tx, k)
			if err != nil || found && cur.ActorID != expect && cur.ActorID != in.ActorID {
				return claimed{holder: cur}, actor.Effects{}, err
			}
			out, err := createOrGet(ctx, tx, in, getOrCreate)
			if err != nil || !out.Created {
				return claimed{done: true, actor: out.Actor}, out.Effects, err
			}
			if _, err := keyres.Replace(ctx, tx, k, expect, cand); err != nil {
				return nil, actor.Effects{}, err
			}
			return claimed{done: true, actor: out.Actor, created: true}, out.Effects, nil
		})
		c, _ := res.(claimed)
		return c, err
	}
	holders, err := p.keys.svc.Replace(ctx, []keyres.Request{{Key: k, Expect: expect, Candidate: cand}})
	if err != nil {
		return claimed{}, p.leaderError(err)
	}
	if len(holders) != 1 || holders[0].ActorID != in.ActorID {
		if len(holders) != 1 {
			return claimed{}, rerr.Internal(errors.New("pegboard: the leader answered a reservation with no holder"))
		}
		return claimed{holder: holders[0]}, nil
	}
	res, err := p.creates.do(ctx, len(in.Input), actor.CreateReads(in), func(ctx context.Context, tx udb.Transaction) (any, actor.Effects, error) {
		out, err := createOrGet(ctx, tx, in, getOrCreate)
		return out, out.Effects, err
	})
	out, _ := res.(actor.GetOrCreateOutput)
	if clientError(err) || err == nil && !out.Created {
		// The reserved id was not created (a bad request, or a holder of this datacenter
		// from before the reservations): free the key for others at once.
		p.queueRelease(release{aid: in.ActorID, key: &k})
	}
	return claimed{done: true, actor: out.Actor, created: out.Created}, err
}

// createOrGet is ops/actor.GetOrCreate, or Create in its output's shape.
func createOrGet(ctx context.Context, tx udb.Transaction, in actor.CreateInput, getOrCreate bool) (actor.GetOrCreateOutput, error) {
	if getOrCreate {
		return actor.GetOrCreate(ctx, tx, in)
	}
	out, err := actor.Create(ctx, tx, in)
	return actor.GetOrCreateOutput{CreateOutput: out, Created: err == nil}, err
}

// settle finds what a key's holder is in its datacenter, fencing it if it is absent past
// its grace: live (with the actor), destroyed, absent (fenced: it can be replaced), or
// pendingCreate.
func (p *Actors) settle(ctx context.Context, h keyres.Holder) (keyres.Liveness, actor.Actor, error) {
	fence := time.Since(time.UnixMilli(h.ReservedAtMs)) >= ReservationGrace
	l, a, err := p.keys.svc.Find(ctx, h.ActorID, fence)
	if err == nil && l == keyres.Absent && !fence {
		l = pendingCreate
	}
	return l, a, err
}

// MARK: releases and migration

// queueRelease queues a release for runKeys; a full queue drops it.
func (p *Actors) queueRelease(r release) {
	select {
	case p.keys.releases <- r:
	default:
		p.o.Log.Debug("key release dropped: queue full", "actor_id", r.aid.String())
	}
}

// runKeys reserves the keys of the actors that existed before this start, then sends the
// releases of destroyed actors' keys, until ctx ends.
func (p *Actors) runKeys(ctx context.Context) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.migrateKeys(ctx)
	}()
	defer func() { <-done }()
	for {
		var batch []release
		select {
		case <-ctx.Done():
			return
		case r := <-p.keys.releases:
			batch = append(batch, r)
		}
	more:
		for len(batch) < migrateBatch {
			select {
			case r := <-p.keys.releases:
				batch = append(batch, r)
			default:
				break more
			}
		}
		p.sendReleases(ctx, batch)
	}
}

// sendReleases frees the reservations of a batch (best effort: a failure is logged).
func (p *Actors) sendReleases(ctx context.Context, batch []release) {
	reqs := make([]keyres.Request, 0, len(batch))
	for _, r := range batch {
		if r.key != nil {
			reqs = append(reqs, keyres.Request{Key: *r.key, Expect: r.aid})
			continue
		}
		as, err := udb.ReadTransact(ctx, p.o.DB, func(rt udb.ReadTransaction) ([]actor.Actor, error) {
			return actor.Get(ctx, rt, actor.GetInput{ActorIDs: []id.ID{r.aid}})
		})
		if err != nil {
			p.warn(ctx, "key release of "+r.aid.String(), err)
			continue
		}
		if a := firstActor(as); a.Key != nil {
			reqs = append(reqs, keyres.Request{Key: keyres.Key{Namespace: a.NamespaceID, Name: a.Name, Key: *a.Key}, Expect: r.aid})
		}
	}
	if len(reqs) == 0 {
		return
	}
	if err := p.keys.svc.Release(ctx, reqs); err != nil {
		p.warn(ctx, "key release", err)
	}
}

// migrateKeys reserves, in batches, the keys of this datacenter's live keyed actors: those
// created before keys were reserved across datacenters (the others hold theirs already, and
// reserving again is a no-op). A key already held by a live actor of another datacenter is a
// conflict: both actors are kept, the conflict is logged and counted, and new duplicates are
// refused as for any key.
func (p *Actors) migrateKeys(ctx context.Context) {
	var from []byte
	var reserved, conflicts int
	for ctx.Err() == nil {
		type page struct {
			entries []keyres.Entry
			next    []byte
		}
		pg, err := udb.ReadTransact(ctx, p.o.DB, func(r udb.ReadTransaction) (page, error) {
			e, next, err := keyres.LiveKeyed(ctx, r, from, migrateBatch)
			return page{e, next}, err
		})
		var holders []keyres.Holder
		if err == nil && len(pg.entries) > 0 {
			reqs := make([]keyres.Request, len(pg.entries))
			for i, e := range pg.entries {
				reqs[i] = keyres.Request{Key: e.Key, Candidate: keyres.Holder{ActorID: e.ActorID, ReservedAtMs: e.CreateTs}}
			}
			if holders, err = p.keys.svc.Replace(ctx, reqs); err == nil && len(holders) != len(reqs) {
				err = errors.New("the leader answered with " + strconv.Itoa(len(holders)) + " holders for " + strconv.Itoa(len(reqs)) + " keys")
			}
		}
		if err != nil {
			p.warn(ctx, "reserving the keys of existing actors (retried in 1 s)", err)
			sleep(ctx, time.Second)
			continue
		}
		for i, e := range pg.entries {
			if holders[i].ActorID == e.ActorID || p.migrateConflict(ctx, e, holders[i]) {
				reserved++
				p.o.Metrics.KeyReservations.WithLabelValues("reserved").Inc()
			} else if ctx.Err() == nil {
				conflicts++
				p.o.Metrics.KeyReservations.WithLabelValues("conflict").Inc()
			}
		}
		if len(pg.entries) > 0 {
			p.o.Log.Info("reserving the keys of existing actors", "reserved", reserved, "conflicts", conflicts)
		}
		if pg.next == nil {
			p.o.Log.Info("keys of existing actors reserved", "reserved", reserved, "conflicts", conflicts)
			return
		}
		from = pg.next
	}
}

// migrateConflict settles a key of an existing actor e that the leader says h holds: it
// reports true once e holds it (h was destroyed or never created), false if h is live (a
// conflict, logged).
func (p *Actors) migrateConflict(ctx context.Context, e keyres.Entry, h keyres.Holder) bool {
	for ctx.Err() == nil {
		l, _, err := p.settle(ctx, h)
		switch {
		case err != nil:
			p.warn(ctx, "settling the key of actor "+e.ActorID.String(), err)
			sleep(ctx, time.Second)
			continue
		case l == keyres.Live:
			p.o.Log.Warn("key conflict: two datacenters have a live actor with one key; both are kept",
				"namespace_id", e.Key.Namespace.String(), "name", e.Key.Name, "key", e.Key.Key,
				"actor_id", e.ActorID.String(), "reserved_for", h.ActorID.String())
			return false
		case l == pendingCreate:
			sleep(ctx, keyWaitMax)
			continue
		}
		holders, err := p.keys.svc.Replace(ctx, []keyres.Request{{Key: e.Key, Expect: h.ActorID,
			Candidate: keyres.Holder{ActorID: e.ActorID, ReservedAtMs: e.CreateTs}}})
		if err != nil {
			p.warn(ctx, "reserving the key of actor "+e.ActorID.String(), err)
			sleep(ctx, time.Second)
			continue
		}
		if len(holders) != 1 {
			return false
		}
		if h = holders[0]; h.ActorID == e.ActorID {
			return true
		}
	}
	return false
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
