package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Whole-namespace ranges of two per-name indexes, for the metrics census, which counts
// every entry without caring about names.

// ActiveActorKeyNamespaceRange is every ActiveActorKey of namespace ns, all names.
func ActiveActorKeyNamespaceRange(ns id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, ns, tagActor, tagByName, tagActive}))
}

// PendingActorKeyNamespaceRange is the pending queues of every pool of namespace ns.
func PendingActorKeyNamespaceRange(ns id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagNamespace, tagPendingActorByRunnerNameSelector, ns}))
}
