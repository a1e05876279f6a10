package runner

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// AnnounceActorNames checks names as a runner's init announcement is checked and records
// them in the namespace's actor names: what a serverless pool's /metadata lists in
// actorNames (docs/serverless.md § 3.2). Nothing is written when a name is refused.
func AnnounceActorNames(tx udb.Transaction, ns id.ID, names []ActorName) error {
	if err := checkActorNames(names); err != nil {
		return err
	}
	writeActorNames(tx, ns, names)
	return nil
}
