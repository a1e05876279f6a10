package envoy

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// DrainInput asks an envoy to drain: it announced that it is stopping
// (ToRivetStopping), or the engine decided so.
type DrainInput struct {
	Namespace id.ID
	EnvoyKey  string
	// ConnID, if not zero, fences the drain to that socket; zero for a
	// drain decided by the engine.
	ConnID id.ID
	NowMs  int64
}

// DrainOutput reports whether this call began the drain.
type DrainOutput struct {
	// Drained is false when the envoy was already draining or expired;
	// nothing was written then.
	Drained bool
}

// Drain takes the envoy out of the load-balancer index and the hash ring, so it gets no new
// actors, and records when: Rivet's envoys have no drain key, and berth
// records the drain in stop_ts (the Envoy object's "stopped at" field),
// since an envoy drains because it is stopping. The envoy stays in the
// active lists, showing stop_ts, while its actors are moved away; its pings
// are still recorded but do not put it back in the index. It leaves the
// lists when it expires (its socket closes); a new registration of the key
// clears stop_ts.
//
// Rivet expires a serverful envoy at once when it announces stopping,
// which would refuse its pings (envoy.expired) while its actors are still
// being evicted; draining keeps the socket usable until then.
//
// Serializable reads, and a read conflict on the load-balancer entry it
// clears. With ConnID set, a stale socket gets envoy.stale_connection.
func Drain(ctx context.Context, tx udb.Transaction, in DrainInput) (DrainOutput, error) {
	s, found, err := readState(ctx, tx, in.Namespace, in.EnvoyKey)
	switch {
	case err != nil:
		return DrainOutput{}, err
	case !found:
		return DrainOutput{}, rerr.EnvoyNotFound(in.EnvoyKey)
	}
	if err := s.fenced(in.ConnID); err != nil {
		return DrainOutput{}, err
	}
	if s.stopped || s.expired {
		return DrainOutput{}, nil
	}
	if err := s.leave(tx); err != nil {
		return DrainOutput{}, err
	}
	keys.Set(tx, keys.EnvoyStopTsKey{Namespace: s.ns, EnvoyKey: s.key}, in.NowMs)
	return DrainOutput{Drained: true}, nil
}
