package keys

import (
	"encoding/binary"
	"encoding/json"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// PoolError is a runner pool's latest error and the successes counted since it
// (docs/serverless.md § 6; Rivet keeps it in the pool's workflow state).
type PoolError struct {
	// Error is the runner_pool_error value: JSON, one of the variants of § 6.
	Error json.RawMessage
	// Successes counts the consecutive successes since Error; the error is cleared at 3.
	Successes uint32
}

// RunnerPoolErrorKey is (PEGBOARD, POOL_ERROR, namespace_id, name) → u32 big-endian
// successes, then the error's JSON. Absent when the pool has no error.
type RunnerPoolErrorKey struct {
	Namespace id.ID
	Name      string
}

func (k RunnerPoolErrorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagPoolError, k.Namespace, k.Name})
}

func (RunnerPoolErrorKey) Encode(v PoolError) []byte {
	return append(binary.BigEndian.AppendUint32(nil, v.Successes), v.Error...)
}

func (RunnerPoolErrorKey) Decode(b []byte) (PoolError, error) {
	if len(b) < 4 || !json.Valid(b[4:]) {
		return PoolError{}, badValue("RunnerPoolErrorKey", "value is not a count and a JSON error")
	}
	return PoolError{Successes: binary.BigEndian.Uint32(b), Error: json.RawMessage(b[4:])}, nil
}
