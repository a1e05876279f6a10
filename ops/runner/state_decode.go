package runner

import (
	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// decodeState builds the state of runner rid from the rows of its data keys, in key order,
// as readState reads them; prefix is the keys' common prefix (keys.RunnerFieldsRange). It
// reports the same errors, in the same order of fields, as a read of one key per field
// would. found is false when the runner does not exist.
func decodeState(rid id.ID, prefix []byte, rows []udb.KeyValue) (state, bool, error) {
	var createTs, namespace, name, key, version, remaining, total, lastPingTs []byte
	var stopTs, expiredTs, protocol, connID, drainTs []byte
	for _, kv := range rows {
		field, chunk, ok := keys.ParseRunnerDataKey(prefix, kv.Key)
		if !ok || chunk != keys.NotChunk {
			continue // not a field's own key: a metadata chunk or the actor command subspace
		}
		v := kv.Value
		switch field {
		case keys.RunnerFieldCreateTs:
			createTs = v
		case keys.RunnerFieldNamespaceID:
			namespace = v
		case keys.RunnerFieldName:
			name = v
		case keys.RunnerFieldKey:
			key = v
		case keys.RunnerFieldVersion:
			version = v
		case keys.RunnerFieldRemainingSlots:
			remaining = v
		case keys.RunnerFieldTotalSlots:
			total = v
		case keys.RunnerFieldLastPingTs:
			lastPingTs = v
		case keys.RunnerFieldStopTs:
			stopTs = v
		case keys.RunnerFieldExpiredTs:
			expiredTs = v
		case keys.RunnerFieldProtocolVersion:
			protocol = v
		case keys.RunnerFieldConnID:
			connID = v
		case keys.RunnerFieldDrainTs:
			drainTs = v
		}
	}
	if createTs == nil {
		return state{}, false, nil
	}
	d := fieldDecoder{rid: rid}
	s := state{id: rid}
	s.createTs, _ = opt(&d, createTs, keys.RunnerCreateTsKey{})
	s.namespace = must(&d, namespace, keys.RunnerNamespaceIDKey{}, "namespace_id")
	s.name = must(&d, name, keys.RunnerDataNameKey{}, "name")
	s.key = must(&d, key, keys.RunnerKeyKey{}, "key")
	s.version = must(&d, version, keys.RunnerVersionKey{}, "version")
	s.remaining = must(&d, remaining, keys.RunnerRemainingSlotsKey{}, "remaining_slots")
	s.total = must(&d, total, keys.RunnerTotalSlotsKey{}, "total_slots")
	s.lastPingTs = must(&d, lastPingTs, keys.RunnerLastPingTsKey{}, "last_ping_ts")
	_, s.stopped = opt(&d, stopTs, keys.RunnerStopTsKey{})
	_, s.expired = opt(&d, expiredTs, keys.RunnerExpiredTsKey{})
	s.protocol, _ = opt(&d, protocol, keys.RunnerProtocolVersionKey{})
	s.connID, _ = opt(&d, connID, keys.RunnerConnIDKey{})
	s.drainTs, s.draining = opt(&d, drainTs, keys.RunnerDrainTsKey{})
	if err := d.err(); err != nil {
		return state{}, false, err
	}
	return s, true, nil
}
