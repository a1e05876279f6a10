package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// DisconnectInput is a runner socket that closed without being evicted.
type DisconnectInput struct {
	RunnerID id.ID
	ConnID   id.ID
}

// Disconnect takes the runner out of the allocation index at once (Rivet's
// ClearIdx on close) and forgets its socket, so that no actor is placed on
// a runner nobody can reach; its data and list entries stay. The runner
// becomes eligible again when it reconnects (Register), or expires if it
// does not.
//
// Fenced like UpdatePing: if a newer socket already took the runner over,
// it fails with runner.stale_connection and writes nothing. Serializable
// reads, for the same reasons.
func Disconnect(ctx context.Context, tx udb.Transaction, in DisconnectInput) error {
	s, found, err := readState(ctx, tx, in.RunnerID)
	switch {
	case err != nil:
		return err
	case !found:
		return rerr.RunnerNotFound(in.RunnerID.String())
	case s.connID.IsZero() || s.connID != in.ConnID:
		return rerr.RunnerStaleConnection(in.RunnerID.String())
	}
	if err := s.unindex(tx); err != nil {
		return err
	}
	keys.Clear(tx, keys.RunnerConnIDKey{RunnerID: s.id})
	return nil
}
