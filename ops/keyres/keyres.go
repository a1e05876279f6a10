package keyres

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Key is an actor key: unique among the live actors of (namespace, name).
type Key struct {
	Namespace id.ID
	Name      string
	Key       string
}

func (k Key) stored() keys.KeyReservationKey {
	return keys.KeyReservationKey{Namespace: k.Namespace, Name: k.Name, Key: k.Key}
}

// Holder is the actor a key is reserved for, and when it was reserved (unix ms).
type Holder = keys.KeyReservation

// Get returns the holder of k, or false when k is free. Serializable through tx.
func Get(ctx context.Context, r udb.ReadTransaction, k Key) (Holder, bool, error) {
	h, found, err := keys.Get(ctx, r, k.stored())
	if err != nil {
		return Holder{}, false, corrupt.Mark("key reservation", err)
	}
	return h, found, nil
}

// Reserve makes candidate the holder of k if k is free, and returns the holder: candidate
// when it won, else the actor holding k. Serializable: of two concurrent reservations of one
// key, one retries and sees the other's.
func Reserve(ctx context.Context, tx udb.Transaction, k Key, candidate Holder) (Holder, error) {
	return Replace(ctx, tx, k, id.ID{}, candidate)
}

// Replace makes candidate the holder of k if k is free or held by expect (compare and swap),
// and returns the holder. The caller replaces a holder only once it knows that actor can
// never be live again: destroyed, or fenced absent (Fence).
func Replace(ctx context.Context, tx udb.Transaction, k Key, expect id.ID, candidate Holder) (Holder, error) {
	cur, found, err := Get(ctx, tx, k)
	if err != nil {
		return Holder{}, err
	}
	if found && cur.ActorID != expect && cur.ActorID != candidate.ActorID {
		return cur, nil
	}
	if found && cur.ActorID == candidate.ActorID {
		return cur, nil // already ours: a retried request
	}
	keys.Set(tx, k.stored(), candidate)
	return candidate, nil
}

// Release frees k if holder holds it (compare and delete), and reports whether it did.
func Release(ctx context.Context, tx udb.Transaction, k Key, holder id.ID) (bool, error) {
	cur, found, err := Get(ctx, tx, k)
	if err != nil || !found || cur.ActorID != holder {
		return false, err
	}
	keys.Clear(tx, k.stored())
	return true, nil
}

// Liveness is what Fence found of an actor id in its datacenter.
type Liveness string

const (
	// Live: the actor exists and is not destroyed.
	Live Liveness = "live"
	// Destroyed: the actor was destroyed; it stays so.
	Destroyed Liveness = "destroyed"
	// Absent: no actor has the id, and now none ever will (the id is fenced).
	Absent Liveness = "absent"
)

// Request is one reservation asked of the leader: candidate for key, replacing expect
// (zero: only if the key is free). Replace carries it out.
type Request struct {
	Key       Key
	Expect    id.ID
	Candidate Holder
}

// Look returns what actor aid is in this datacenter, the one its id names, without fencing
// it: Absent then only means not created yet. Serializable through tx.
func Look(ctx context.Context, r udb.ReadTransaction, aid id.ID) (Liveness, error) {
	st, found, err := keys.Get(ctx, r, keys.ActorStateKey{ActorID: aid})
	switch {
	case err != nil:
		return "", corrupt.Mark("actor", err)
	case found && st.Phase == keys.PhaseDestroyed:
		return Destroyed, nil
	case found:
		return Live, nil
	}
	return Absent, nil
}

// Fence settles whether actor aid exists in this datacenter, the one its id names. If it
// does not, Fence writes the id's fence (keys.KeyFenceKey): ops/actor.Create of a reserved
// key reads it in its own transaction, so of a creator and a fencer exactly one wins.
// Serializable reads of the actor's state and fence.
func Fence(ctx context.Context, tx udb.Transaction, aid id.ID, nowMs int64) (Liveness, error) {
	if l, err := Look(ctx, tx, aid); err != nil || l != Absent {
		return l, err
	}
	if _, fenced, err := keys.Get(ctx, tx, keys.KeyFenceKey{ActorID: aid}); err != nil {
		return "", corrupt.Mark("key fence", err)
	} else if !fenced {
		keys.Set(tx, keys.KeyFenceKey{ActorID: aid}, nowMs)
	}
	return Absent, nil
}
