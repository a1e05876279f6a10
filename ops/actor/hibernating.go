package actor

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// HibernatingInput names a client WebSocket the gateway keeps open while its actor sleeps.
type HibernatingInput struct {
	ActorID   id.ID
	GatewayID [4]byte
	RequestID [4]byte
	NowMs     int64
}

func (in HibernatingInput) key() keys.HibernatingRequestKey {
	return keys.HibernatingRequestKey{ActorID: in.ActorID, GatewayID: in.GatewayID, RequestID: in.RequestID}
}

// SetHibernating records (or refreshes, as a keepalive) a hibernating WebSocket: the
// actor's next start restores it.
func SetHibernating(tx udb.Transaction, in HibernatingInput) {
	keys.Set(tx, in.key(), in.NowMs)
}

// ClearHibernating forgets a hibernating WebSocket (the client left, or it woke up).
func ClearHibernating(tx udb.Transaction, in HibernatingInput) {
	keys.Clear(tx, in.key())
}

// hibernatingRequests returns the actor's hibernating WebSockets refreshed at or after
// sinceMs, for its start command, and clears the stale ones.
func (m *machine) hibernatingRequests(aid id.ID, sinceMs int64) ([]HibernatingRequest, error) {
	begin, end := keys.HibernatingRequestRange(aid)
	kvs, err := m.tx.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(m.ctx)
	if err != nil {
		return nil, err
	}
	out := []HibernatingRequest{}
	for _, kv := range kvs {
		k, err := keys.UnpackHibernatingRequestKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		ts, err := k.Decode(kv.Value)
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		if ts < sinceMs {
			m.tx.Clear(kv.Key)
			continue
		}
		out = append(out, HibernatingRequest{GatewayID: k.GatewayID, RequestID: k.RequestID})
	}
	return out, nil
}

// HibernatingRequests lists the hibernating WebSockets of an actor refreshed at or after
// sinceMs (snapshot).
func HibernatingRequests(ctx context.Context, r udb.ReadTransaction, aid id.ID, sinceMs int64) ([]HibernatingRequest, error) {
	begin, end := keys.HibernatingRequestRange(aid)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := []HibernatingRequest{}
	for _, kv := range kvs {
		k, err := keys.UnpackHibernatingRequestKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("actor", err)
		}
		if ts, err := k.Decode(kv.Value); err == nil && ts >= sinceMs {
			out = append(out, HibernatingRequest{GatewayID: k.GatewayID, RequestID: k.RequestID})
		}
	}
	return out, nil
}
