package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// UpdatePingInput is a pong received on a runner socket.
type UpdatePingInput struct {
	RunnerID id.ID
	// ConnID is the socket's connection id (RegisterInput.ConnID).
	ConnID id.ID
	RttMs  uint32
	NowMs  int64
}

// UpdatePingOutput reports the runner's state as the ping found it.
type UpdatePingOutput struct {
	// PrevPingTs is the ping time this one replaced. A gap longer than the
	// eligibility threshold means the runner just became eligible again.
	PrevPingTs int64
	// Indexed is true when the runner is in the allocation index (it is not
	// draining, stopped or expired).
	Indexed bool
}

// UpdatePing records a ping from the runner's current socket: last ping
// time and RTT, and the allocation-index entry moved to the new ping time.
// A draining, stopped or expired runner records the ping but stays out of
// the index.
//
// Fencing: a ping from a socket that a newer registration replaced (or
// that disconnected) fails with runner.stale_connection and writes nothing;
// an unknown runner is runner.not_found.
//
// Serializable reads: a concurrent reconnect, drain, expiry or slot change
// makes this transaction conflict and retry, so a ping never overwrites a
// newer socket's state or puts back an index entry that was just removed.
// The old index entry also gets an explicit read conflict (see unindex).
func UpdatePing(ctx context.Context, tx udb.Transaction, in UpdatePingInput) (UpdatePingOutput, error) {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return UpdatePingOutput{}, err
	case !found:
		return UpdatePingOutput{}, rerr.RunnerNotFound(in.RunnerID.String())
	case s.connID.IsZero() || s.connID != in.ConnID:
		return UpdatePingOutput{}, rerr.RunnerStaleConnection(in.RunnerID.String())
	}
	out := UpdatePingOutput{PrevPingTs: s.lastPingTs, Indexed: s.indexed()}
	if err := s.unindex(tx); err != nil {
		return UpdatePingOutput{}, err
	}
	s.setPing(tx, in.NowMs)
	keys.Set(tx, keys.RunnerLastRttKey{RunnerID: s.id}, in.RttMs)
	if out.Indexed {
		s.index(tx)
	}
	return out, nil
}
