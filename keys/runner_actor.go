package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// RunnerActorKey is (RUNNER, ACTOR, runner_id, actor_id) → generation
// (big-endian u32; an empty value reads as 0, as in Rivet): the actors placed
// on a runner and not yet stopped. A draining runner stops once its range is
// empty.
type RunnerActorKey struct {
	RunnerID id.ID
	ActorID  id.ID
}

func (k RunnerActorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagActor, k.RunnerID, k.ActorID})
}

// UnpackRunnerActorKey parses a RunnerActorKey, checking every constant segment.
func UnpackRunnerActorKey(b []byte) (RunnerActorKey, error) {
	t, err := unpack("RunnerActorKey", pegboard, b, tagRunner, tagActor, anyID, anyID)
	if err != nil {
		return RunnerActorKey{}, err
	}
	return RunnerActorKey{RunnerID: t[2].(id.ID), ActorID: t[3].(id.ID)}, nil
}

func (RunnerActorKey) Encode(generation uint32) []byte { return encodeU32(generation) }
func (RunnerActorKey) Decode(b []byte) (uint32, error) {
	if len(b) == 0 {
		return 0, nil
	}
	return decodeU32("RunnerActorKey", b)
}

// RunnerActorKeyRange is the RunnerActorKey entries of runner rid.
func RunnerActorKeyRange(rid id.ID) (begin, end []byte) {
	return prefixRange(pegboard.Pack(tuple.Tuple{tagRunner, tagActor, rid}))
}
