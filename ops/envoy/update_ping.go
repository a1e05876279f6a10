package envoy

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// UpdatePingInput is a pong received on an envoy socket.
type UpdatePingInput struct {
	Namespace id.ID
	EnvoyKey  string
	// ConnID is the socket's connection id (RegisterInput.ConnID).
	ConnID id.ID
	RttMs  uint32
	NowMs  int64
}

// UpdatePingOutput reports the envoy's state as the ping found it.
type UpdatePingOutput struct {
	// PrevPingTs is the ping time this one replaced.
	PrevPingTs int64
	// Indexed is true when the envoy is in the load-balancer index (it is
	// not draining).
	Indexed bool
}

// UpdatePing records a ping from the envoy's current socket: last ping time
// and RTT (ms), and the load-balancer entry moved from the old ping time to
// the new one. A draining envoy records the ping but stays out of the index.
//
// Refused, writing nothing, with distinct outcomes: a socket that a newer
// registration replaced gets envoy.stale_connection (it must close); the
// current socket of an envoy that was expired gets envoy.expired (it must
// reconnect, which registers it again). An envoy never registered is
// envoy.not_found.
//
// Serializable reads: a concurrent reconnect or expiry makes this
// transaction conflict and retry, and the retry sees it. The old index
// entry also gets an explicit read conflict (see unindex).
func UpdatePing(ctx context.Context, tx udb.Transaction, in UpdatePingInput) (UpdatePingOutput, error) {
	s, found, err := readState(ctx, tx, in.Namespace, in.EnvoyKey)
	switch {
	case err != nil:
		return UpdatePingOutput{}, err
	case !found:
		return UpdatePingOutput{}, rerr.EnvoyNotFound(in.EnvoyKey)
	case s.connID.IsZero() || s.connID != in.ConnID:
		return UpdatePingOutput{}, rerr.EnvoyStaleConnection(in.EnvoyKey)
	case s.expired:
		return UpdatePingOutput{}, rerr.EnvoyExpired(in.EnvoyKey)
	}
	out := UpdatePingOutput{PrevPingTs: s.lastPingTs, Indexed: s.indexed()}
	if err := s.unindex(tx); err != nil {
		return UpdatePingOutput{}, err
	}
	keys.Set(tx, keys.EnvoyLastPingTsKey{Namespace: s.ns, EnvoyKey: s.key}, in.NowMs)
	keys.Set(tx, keys.EnvoyLastRttKey{Namespace: s.ns, EnvoyKey: s.key}, in.RttMs)
	if out.Indexed {
		s.lastPingTs = in.NowMs
		s.index(tx)
	}
	return out, nil
}
