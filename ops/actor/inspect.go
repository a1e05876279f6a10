package actor

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// Detail is what an inspector shows of an actor beyond its public object.
type Detail struct {
	Status
	AlarmTs    *int64 // its alarm, nil when none is set
	RetryCount uint32 // crashes since it last ran long enough to reset its backoff
	WillWake   bool   // a wake came while it was stopping
	// Hibernating is its open hibernating WebSockets (at most the limit asked for).
	Hibernating []HibernatingSocket
}

// HibernatingSocket is a client WebSocket the gateway keeps open while its actor sleeps.
type HibernatingSocket struct {
	GatewayID, RequestID [4]byte
	KeepaliveMs          int64 // its last keepalive
}

// Inspect reads actor aid's detail at snapshot isolation, with at most maxSockets of its
// hibernating WebSockets; found is false when the actor does not exist.
func Inspect(ctx context.Context, r udb.ReadTransaction, aid id.ID, maxSockets int) (Detail, bool, error) {
	st, found, err := state(ctx, r, aid)
	if err != nil || !found {
		return Detail{}, found, err
	}
	d := Detail{Status: statusOf(st), AlarmTs: st.AlarmTs, RetryCount: st.RetryCount, WillWake: st.WillWake,
		Hibernating: []HibernatingSocket{}}
	begin, end := keys.HibernatingRequestRange(aid)
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{Limit: maxSockets}).All(ctx)
	if err != nil {
		return Detail{}, false, err
	}
	for _, kv := range kvs {
		k, err := keys.UnpackHibernatingRequestKey(kv.Key)
		if err != nil {
			return Detail{}, false, corrupt.Mark("actor", err)
		}
		ts, err := k.Decode(kv.Value)
		if err != nil {
			return Detail{}, false, corrupt.Mark("actor", err)
		}
		d.Hibernating = append(d.Hibernating, HibernatingSocket{GatewayID: k.GatewayID, RequestID: k.RequestID, KeepaliveMs: ts})
	}
	return d, true, nil
}
