package hostsock

import (
	"context"
	"time"

	"github.com/berthhq/berth/ops/actorkv"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
	proto "github.com/berthhq/berth/sdk/protocol/envoy"
)

// preloadTimeout bounds the KV read of one start command.
const preloadTimeout = 5 * time.Second

// addPreloadedKv fills preloadedKv in the start commands of cmds: the actor's whole KV when
// it holds at most actorkv.MaxPreloadSize bytes, given as found under the empty prefix (so a
// key absent from it does not exist); nothing above that, or when the read fails (the actor
// then reads its KV itself).
func (*envoyProtocol) addPreloadedKv(c *conn, cmds proto.ToEnvoyCommands) {
	for i, cmd := range cmds {
		start, ok := cmd.Inner.(proto.CommandStartActor)
		if !ok {
			continue
		}
		aid, err := id.Parse(cmd.Checkpoint.ActorID)
		if err != nil {
			continue
		}
		ctx, cancel := context.WithTimeout(c.s.ctx, preloadTimeout)
		res, err := udb.ReadTransact(ctx, c.s.o.DB, func(r udb.ReadTransaction) (*proto.PreloadedKv, error) {
			// Snapshot: the actor is not running yet, so nothing else writes its KV.
			entries, complete, err := actorkv.Preload(ctx, r.Snapshot(), aid)
			if err != nil || !complete {
				return (*proto.PreloadedKv)(nil), err
			}
			pk := &proto.PreloadedKv{Entries: make([]proto.PreloadedKvEntry, len(entries)), RequestedPrefixes: [][]byte{{}}}
			for j, e := range entries {
				pk.Entries[j] = proto.PreloadedKvEntry{Key: e.Key, Value: e.Value,
					Metadata: proto.KvMetadata{Version: e.Metadata.Version, UpdateTs: e.Metadata.UpdateTs}}
			}
			return pk, nil
		})
		cancel()
		if err != nil {
			if c.s.ctx.Err() == nil {
				c.s.o.Log.Warn("envoy socket: preload kv", c.logAttrs("actor_id", cmd.Checkpoint.ActorID, "error", err)...)
			}
			continue
		}
		start.PreloadedKv = res
		cmds[i].Inner = start
	}
}
