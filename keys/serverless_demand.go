package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// ServerlessDemandKey is (PEGBOARD, SERVERLESS_DEMAND, namespace_id, name) → i64 LE, added
// to by atomic add: a serverless runner pool's count of changes to its demand (an actor
// became pending, took a slot or freed one). Its value means nothing; the node that scales
// the pool watches the key to recount the demand (engine/serverless, runner pools).
// berth's own: Rivet's ServerlessDesiredSlotsKey holds the count itself.
type ServerlessDemandKey struct {
	Namespace id.ID
	Name      string
}

func (k ServerlessDemandKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagServerlessDemand, k.Namespace, k.Name})
}

// UnpackServerlessDemandKey parses a ServerlessDemandKey, checking every constant segment.
func UnpackServerlessDemandKey(b []byte) (ServerlessDemandKey, error) {
	t, err := unpack("ServerlessDemandKey", pegboard, b, tagServerlessDemand, anyID, anyString)
	if err != nil {
		return ServerlessDemandKey{}, err
	}
	return ServerlessDemandKey{Namespace: t[1].(id.ID), Name: t[2].(string)}, nil
}

func (ServerlessDemandKey) Encode(v int64) []byte { return encodeCounter(v) }
func (ServerlessDemandKey) Decode(b []byte) (int64, error) {
	return decodeCounter("ServerlessDemandKey", b)
}
func (ServerlessDemandKey) isCounter() {}
