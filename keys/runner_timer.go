package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Runner timer indexes, berth's own (Rivet keeps these deadlines in workflow
// timers): the pegboard loop scans each for entries older than the runner
// lost threshold. Lifecycle deadlines are data, so that any engine node, and
// a restarted one, finds them.

// RunnerPingIdxKey is (RUNNER, PING_IDX, last_ping_ts, runner_id) → empty:
// every runner that has not stopped, by its last ping. A runner whose entry
// is older than the lost threshold is lost. Register writes it, each ping
// moves it, stopping clears it.
type RunnerPingIdxKey struct {
	LastPingTs int64
	RunnerID   id.ID
}

func (k RunnerPingIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagPingIdx, k.LastPingTs, k.RunnerID})
}

// UnpackRunnerPingIdxKey parses a RunnerPingIdxKey, checking every constant segment.
func UnpackRunnerPingIdxKey(b []byte) (RunnerPingIdxKey, error) {
	t, err := unpack("RunnerPingIdxKey", pegboard, b, tagRunner, tagPingIdx, anyInt, anyID)
	if err != nil {
		return RunnerPingIdxKey{}, err
	}
	return RunnerPingIdxKey{LastPingTs: t[2].(int64), RunnerID: t[3].(id.ID)}, nil
}

func (RunnerPingIdxKey) Encode(Empty) []byte            { return encodeEmpty() }
func (RunnerPingIdxKey) Decode(b []byte) (Empty, error) { return decodeEmpty("RunnerPingIdxKey", b) }

// RunnerPingIdxRange is every RunnerPingIdxKey, oldest ping first; BeforeTs(t)
// is the runners not pinged since before t.
func RunnerPingIdxRange() CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagRunner, tagPingIdx})
}

// RunnerDrainIdxKey is (RUNNER, DRAIN_IDX, drain_ts, runner_id) → empty: the
// runners draining but not yet stopped, by drain time. A runner whose entry
// is older than the lost threshold stops with its remaining actors lost.
type RunnerDrainIdxKey struct {
	DrainTs  int64
	RunnerID id.ID
}

func (k RunnerDrainIdxKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagDrainIdx, k.DrainTs, k.RunnerID})
}

// UnpackRunnerDrainIdxKey parses a RunnerDrainIdxKey, checking every constant segment.
func UnpackRunnerDrainIdxKey(b []byte) (RunnerDrainIdxKey, error) {
	t, err := unpack("RunnerDrainIdxKey", pegboard, b, tagRunner, tagDrainIdx, anyInt, anyID)
	if err != nil {
		return RunnerDrainIdxKey{}, err
	}
	return RunnerDrainIdxKey{DrainTs: t[2].(int64), RunnerID: t[3].(id.ID)}, nil
}

func (RunnerDrainIdxKey) Encode(Empty) []byte            { return encodeEmpty() }
func (RunnerDrainIdxKey) Decode(b []byte) (Empty, error) { return decodeEmpty("RunnerDrainIdxKey", b) }

// RunnerDrainIdxRange is every RunnerDrainIdxKey, oldest drain first.
func RunnerDrainIdxRange() CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagRunner, tagDrainIdx})
}
