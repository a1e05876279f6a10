package runner

import (
	"encoding/json"
	"strconv"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/metadata"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// ActorName is an actor name a runner announces at init (prepopulateActorNames), with its
// metadata, a JSON object.
type ActorName struct {
	Name     string
	Metadata json.RawMessage
}

// Limits on the actor names of one registration; Rivet has none.
const (
	MaxActorNameLen   = 128
	MaxActorNames     = 1024
	actorNamesField   = "prepopulate_actor_names"
	maxActorNamesSize = metadata.MaxLen // all their metadata together
)

// checkActorNames validates the announced actor names; errors are api.bad_request naming
// the field (prepopulate_actor_names.<name>.metadata for one name's metadata).
func checkActorNames(names []ActorName) error {
	if len(names) > MaxActorNames {
		return rerr.BadRequest(actorNamesField, "more than "+strconv.Itoa(MaxActorNames)+" names")
	}
	size := 0
	for _, n := range names {
		if err := checkName(actorNamesField, n.Name, MaxActorNameLen); err != nil {
			return err
		}
		if err := metadata.CheckField(actorNamesField+"."+n.Name+".metadata", n.Metadata); err != nil {
			return err
		}
		size += len(n.Metadata)
	}
	if size > maxActorNamesSize {
		return rerr.BadRequest(actorNamesField, "metadata larger than "+strconv.Itoa(maxActorNamesSize)+" bytes in all")
	}
	return nil
}

// writeActorNames records the names in the namespace's actor names (GET /actors/names), as
// Rivet's runner init does; a name already known gets the new metadata.
func writeActorNames(tx udb.Transaction, ns id.ID, names []ActorName) {
	for _, n := range names {
		md := string(n.Metadata)
		if md == "" {
			md = "{}"
		}
		keys.Set(tx, keys.ActorNameKey{Namespace: ns, Name: n.Name}, keys.ActorNameValue{Metadata: md})
	}
}
