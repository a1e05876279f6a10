package keys

import "github.com/berthhq/berth/pkg/subspace"

// Segment tags are stored bytes: each names one key segment and has the Rivet
// engine's number (docs/design.md, "Key space"). Never renumber or reuse a tag;
// retire one by commenting it out. Not every tag listed here is used yet: they
// are reserved so that new keys take Rivet's number. 100–105 are reserved by
// Rivet EE.
const (
	tagRivet                            = 0
	tagGasoline                         = 1
	tagPegboard                         = 3
	tagData                             = 4
	tagCreateTs                         = 15
	tagName                             = 19
	tagWorkflowID                       = 20
	tagLastPingTs                       = 24
	tagActor                            = 32
	tagByName                           = 33
	tagNamespace                        = 39
	tagHibernatingRequest               = 40
	tagDisplayName                      = 41
	tagConnectable                      = 42
	tagSleepTs                          = 43
	tagMetadata                         = 44
	tagRunner                           = 46
	tagRunnerAllocIdx                   = 47
	tagRemainingSlots                   = 48
	tagTotalSlots                       = 49
	tagRunnerID                         = 51
	tagNamespaceID                      = 52
	tagPendingActorByRunnerNameSelector = 53
	tagActive                           = 56
	tagVersion                          = 59
	tagAll                              = 67
	tagByNameAndKey                     = 68
	tagDestroyTs                        = 69
	tagEpoxyV1                          = 70
	tagActorKV                          = 72
	tagStopTs                           = 73
	tagDrainTs                          = 74
	tagLastRtt                          = 75
	tagConnectedTs                      = 76
	tagExpiredTs                        = 77
	tagKey                              = 78
	tagReservation                      = 83
	tagConfig                           = 90
	tagServerless                       = 94
	tagDesiredSlots                     = 95
	tagByVariant                        = 96
	tagProtocolVersion                  = 106
	tagLastCommandIdx                   = 107
	tagCommand                          = 108
	tagRunnerNameSelector               = 109
	tagEnvoy                            = 115
	tagEnvoyKey                         = 116
	tagPoolName                         = 117
	tagSlots                            = 118
	tagEnvoyLoadBalancerIdx             = 119
	tagGlobal                           = 125
	tagGeneration                       = 130
	tagEnvoyHashIdx                     = 131
	tagVirtualNodes                     = 132
)

// berth's own tags, for keys Rivet does not have. They start at 1000, far
// above Rivet's numbers (0–132 when this was written), so that a number Rivet
// adds later never collides with one of ours. The same rule applies: never
// renumber or reuse.
const (
	// tagConnID names the current connection id of a runner or envoy, the
	// fencing token that lets a newer socket refuse a stale one's writes.
	tagConnID = 1000
	// tagPingIdx and tagDrainIdx name the runner timer indexes (runner_timer.go).
	tagPingIdx  = 1001
	tagDrainIdx = 1002
	// tagKVSize names an actor's KV size counter (actor_kv.go).
	tagKVSize = 1003
	// Actor lifecycle (actor_lifecycle.go): the state record, the input, the
	// timer index.
	tagState = 1010
	tagInput = 1011
	tagTimer = 1012
	// Engine nodes of one datacenter (node.go): the node subspace, a node's
	// lease, the runner-socket ownership record and its per-node index.
	tagNode         = 1020
	tagNodeLease    = 1021
	tagSocketOwner  = 1022
	tagNodeSocketIx = 1023
	// Actor SQLite page store (actor_sqlite.go): the actor's subspace and its
	// staged commits.
	tagActorSQLite = 1030
	tagSQLiteStage = 1031
	// Keys unique across datacenters (key_reservation.go): the subspace, a
	// key's reservation (in the leader datacenter's store) and an actor id's
	// fence (in the actor's datacenter).
	tagKeyRes         = 1040
	tagKeyReservation = 1041
	tagKeyFence       = 1042
	// The store's own metadata (store.go): the subspace and its schema version.
	tagStore         = 1050
	tagSchemaVersion = 1051
	// A runner pool's error (pool_error.go).
	tagPoolError = 1060
	// Leases held by one engine node at a time (lease.go).
	tagLease = 1070
	// A serverless runner pool's demand changes (serverless_demand.go).
	tagServerlessDemand = 1080
	// A serverless pool's count of allocated actors (pool_actors.go).
	tagPoolActors = 1090
	// An actor's recent lifecycle transitions (actor_history.go).
	tagHistory = 1100
)

// Subspaces, as in Rivet: pegboard (RIVET, PEGBOARD) holds actor, runner,
// envoy and namespace-index keys; namespace (RIVET, NAMESPACE) holds the
// namespace records.
var (
	pegboard     = subspace.Sub(tagRivet, tagPegboard)
	namespaceSub = subspace.Sub(tagRivet, tagNamespace)
)
