package sqlite

import (
	"context"
	"fmt"
	"math"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Fence names the placement of an actor that may use its database: every page read and
// write checks it against the actor's lifecycle record, read serializably in the same
// transaction, so a host whose actor moved (a newer generation) or stopped can never write
// again: a placement committed meanwhile makes the transaction retry and then fail.
type Fence struct {
	ActorID    id.ID
	Generation uint32
	// Offline makes the fence the opposite of a placement's: generation Generation is the
	// actor's last one and the actor is on no host, so the engine itself may write (SQL run
	// while it sleeps). A placement committed meanwhile makes the write fail.
	Offline bool
	// Host, when set, is one more check in the same transaction, given the record: the
	// socket's (it is still its envoy's socket and the actor is placed on that envoy). Its
	// error is returned as is.
	Host func(ctx context.Context, r udb.ReadTransaction, st keys.ActorState) error
}

// GenerationFromWire converts a request's u64 generation; ok is false when it cannot be an
// actor generation (u32).
func GenerationFromWire(g uint64) (uint32, bool) {
	if g > math.MaxUint32 {
		return 0, false
	}
	return uint32(g), true
}

func errFenced(aid id.ID, gen uint32, format string, args ...any) error {
	return rerr.SQLiteFenced(aid.String(), gen, fmt.Sprintf(format, args...))
}

// placed reports whether an actor in phase p is on a host (the host owns its database).
func placed(p keys.ActorPhase) bool {
	return p == keys.PhaseStarting || p == keys.PhaseRunning || p == keys.PhaseStopping
}

// checkFence reads the actor's record serializably and checks that f's placement holds it
// (f.Offline: that no placement does). anyPhase checks only the actor and its generation.
func checkFence(ctx context.Context, tx udb.ReadTransaction, f Fence, anyPhase bool) (keys.ActorState, error) {
	st, found, err := keys.Get(ctx, tx, keys.ActorStateKey{ActorID: f.ActorID})
	switch {
	case err != nil:
		return st, corrupt.Mark("actor", err)
	case !found:
		return st, rerr.ActorNotFound(f.ActorID.String())
	case st.Phase == keys.PhaseDestroyed:
		return st, rerr.ActorNotFound(f.ActorID.String())
	case st.Generation != f.Generation:
		return st, errFenced(f.ActorID, f.Generation, "the actor is at generation %d", st.Generation)
	case anyPhase:
		return st, nil
	case f.Offline && placed(st.Phase):
		return st, errFenced(f.ActorID, f.Generation, "the actor was placed meanwhile (%s)", st.Phase)
	case !f.Offline && !placed(st.Phase):
		return st, errFenced(f.ActorID, f.Generation, "the actor is %s, not placed", st.Phase)
	}
	if f.Host != nil {
		if err := f.Host(ctx, tx, st); err != nil {
			return st, err
		}
	}
	return st, nil
}
