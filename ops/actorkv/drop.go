package actorkv

import (
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// DropAll deletes every key of the actor and its size counter, without reading: the runner
// protocol's KvDropRequest, and the KV part of destroying an actor.
func DropAll(tx udb.Transaction, actorID id.ID) {
	tx.ClearRange(keys.ActorKVRange(actorID))
}
