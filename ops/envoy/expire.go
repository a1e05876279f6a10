package envoy

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ExpireInput declares an envoy lost: its socket closed, or it stopped
// pinging.
type ExpireInput struct {
	Namespace id.ID
	EnvoyKey  string
	// ConnID, if not zero, fences the expiry to that socket: a socket that
	// closes after a newer one took over must not expire the envoy.
	ConnID id.ID
	// PingBeforeMs, if not 0, expires the envoy only if its last ping is
	// older than this (Rivet's skip_if_fresh): the check and the expiry are
	// one transaction, so a ping landing in between makes the expiry retry
	// and find the envoy fresh.
	PingBeforeMs int64
	NowMs        int64
}

// ExpireOutput reports whether this call expired the envoy.
type ExpireOutput struct {
	// Expired is false when the envoy was already expired or, with
	// PingBeforeMs, pinged recently; nothing was written then.
	Expired bool
}

// Expire marks the envoy expired (expired_ts) and takes it out of the
// load-balancer index and the hash ring and the active indexes, in one transaction (Rivet's
// pegboard_envoy_expire). Its data stays; Get still finds it. Pings from its
// socket are refused with envoy.expired until it registers again.
//
// Serializable reads, and a read conflict on the load-balancer entry it
// clears. With ConnID set, a stale socket gets envoy.stale_connection.
func Expire(ctx context.Context, tx udb.Transaction, in ExpireInput) (ExpireOutput, error) {
	s, found, err := readState(ctx, tx, in.Namespace, in.EnvoyKey)
	switch {
	case err != nil:
		return ExpireOutput{}, err
	case !found:
		return ExpireOutput{}, rerr.EnvoyNotFound(in.EnvoyKey)
	}
	if err := s.fenced(in.ConnID); err != nil {
		return ExpireOutput{}, err
	}
	if s.expired || in.PingBeforeMs != 0 && s.lastPingTs >= in.PingBeforeMs {
		return ExpireOutput{}, nil
	}
	if err := s.leave(tx); err != nil {
		return ExpireOutput{}, err
	}
	s.deactivate(tx)
	keys.Set(tx, keys.EnvoyExpiredTsKey{Namespace: s.ns, EnvoyKey: s.key}, in.NowMs)
	return ExpireOutput{Expired: true}, nil
}
