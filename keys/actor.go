package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Actor data keys (docs/design.md, "Key space"): one value per field under
// (ACTOR, DATA, actor_id), in the pegboard subspace.

func actorDataKey(aid id.ID, tag int) []byte {
	return pegboard.Pack(tuple.Tuple{tagActor, tagData, aid, tag})
}

func unpackActorData(name string, b []byte, tag int) (id.ID, error) {
	t, err := unpack(name, pegboard, b, tagActor, tagData, anyID, tag)
	if err != nil {
		return id.ID{}, err
	}
	return t[2].(id.ID), nil
}

// ActorCreateTsKey is (ACTOR, DATA, actor_id, CREATE_TS) → int64 big-endian: unix ms when the
// actor was created.
type ActorCreateTsKey struct{ ActorID id.ID }

func (k ActorCreateTsKey) Pack() []byte { return actorDataKey(k.ActorID, tagCreateTs) }

// UnpackActorCreateTsKey parses a ActorCreateTsKey, checking every constant segment.
func UnpackActorCreateTsKey(b []byte) (ActorCreateTsKey, error) {
	aid, err := unpackActorData("ActorCreateTsKey", b, tagCreateTs)
	return ActorCreateTsKey{ActorID: aid}, err
}

func (ActorCreateTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (ActorCreateTsKey) Decode(b []byte) (int64, error) { return decodeI64("ActorCreateTsKey", b) }

// ActorWorkflowIDKey is (ACTOR, DATA, actor_id, WORKFLOW_ID) → id.ID, 19 raw bytes.
// berth has no workflow engine: callers store the zero ID or the actor's own id.
type ActorWorkflowIDKey struct{ ActorID id.ID }

func (k ActorWorkflowIDKey) Pack() []byte { return actorDataKey(k.ActorID, tagWorkflowID) }

// UnpackActorWorkflowIDKey parses a ActorWorkflowIDKey, checking every constant segment.
func UnpackActorWorkflowIDKey(b []byte) (ActorWorkflowIDKey, error) {
	aid, err := unpackActorData("ActorWorkflowIDKey", b, tagWorkflowID)
	return ActorWorkflowIDKey{ActorID: aid}, err
}

func (ActorWorkflowIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (ActorWorkflowIDKey) Decode(b []byte) (id.ID, error) { return decodeID("ActorWorkflowIDKey", b) }

// ActorNamespaceIDKey is (ACTOR, DATA, actor_id, NAMESPACE_ID) → id.ID, 19 raw bytes: the
// namespace.
type ActorNamespaceIDKey struct{ ActorID id.ID }

func (k ActorNamespaceIDKey) Pack() []byte { return actorDataKey(k.ActorID, tagNamespaceID) }

// UnpackActorNamespaceIDKey parses a ActorNamespaceIDKey, checking every constant segment.
func UnpackActorNamespaceIDKey(b []byte) (ActorNamespaceIDKey, error) {
	aid, err := unpackActorData("ActorNamespaceIDKey", b, tagNamespaceID)
	return ActorNamespaceIDKey{ActorID: aid}, err
}

func (ActorNamespaceIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (ActorNamespaceIDKey) Decode(b []byte) (id.ID, error) { return decodeID("ActorNamespaceIDKey", b) }

// ActorDataNameKey is (ACTOR, DATA, actor_id, NAME) → string, raw UTF-8: the actor name.
// (Rivet's actor::NameKey; ActorNameKey is the namespace's index of names.)
type ActorDataNameKey struct{ ActorID id.ID }

func (k ActorDataNameKey) Pack() []byte { return actorDataKey(k.ActorID, tagName) }

// UnpackActorDataNameKey parses a ActorDataNameKey, checking every constant segment.
func UnpackActorDataNameKey(b []byte) (ActorDataNameKey, error) {
	aid, err := unpackActorData("ActorDataNameKey", b, tagName)
	return ActorDataNameKey{ActorID: aid}, err
}

func (ActorDataNameKey) Encode(v string) []byte          { return encodeString(v) }
func (ActorDataNameKey) Decode(b []byte) (string, error) { return decodeString("ActorDataNameKey", b) }

// ActorKeyKey is (ACTOR, DATA, actor_id, KEY) → string, raw UTF-8: the actor key.
type ActorKeyKey struct{ ActorID id.ID }

func (k ActorKeyKey) Pack() []byte { return actorDataKey(k.ActorID, tagKey) }

// UnpackActorKeyKey parses a ActorKeyKey, checking every constant segment.
func UnpackActorKeyKey(b []byte) (ActorKeyKey, error) {
	aid, err := unpackActorData("ActorKeyKey", b, tagKey)
	return ActorKeyKey{ActorID: aid}, err
}

func (ActorKeyKey) Encode(v string) []byte          { return encodeString(v) }
func (ActorKeyKey) Decode(b []byte) (string, error) { return decodeString("ActorKeyKey", b) }

// ActorRunnerNameSelectorKey is (ACTOR, DATA, actor_id, RUNNER_NAME_SELECTOR) → string, raw UTF-8:
// the runner pool (actor workflow v1).
type ActorRunnerNameSelectorKey struct{ ActorID id.ID }

func (k ActorRunnerNameSelectorKey) Pack() []byte {
	return actorDataKey(k.ActorID, tagRunnerNameSelector)
}

// UnpackActorRunnerNameSelectorKey parses a ActorRunnerNameSelectorKey, checking every constant
// segment.
func UnpackActorRunnerNameSelectorKey(b []byte) (ActorRunnerNameSelectorKey, error) {
	aid, err := unpackActorData("ActorRunnerNameSelectorKey", b, tagRunnerNameSelector)
	return ActorRunnerNameSelectorKey{ActorID: aid}, err
}

func (ActorRunnerNameSelectorKey) Encode(v string) []byte { return encodeString(v) }
func (ActorRunnerNameSelectorKey) Decode(b []byte) (string, error) {
	return decodeString("ActorRunnerNameSelectorKey", b)
}

// ActorPoolNameKey is (ACTOR, DATA, actor_id, POOL_NAME) → string, raw UTF-8: the envoy pool
// (actor2).
type ActorPoolNameKey struct{ ActorID id.ID }

func (k ActorPoolNameKey) Pack() []byte { return actorDataKey(k.ActorID, tagPoolName) }

// UnpackActorPoolNameKey parses a ActorPoolNameKey, checking every constant segment.
func UnpackActorPoolNameKey(b []byte) (ActorPoolNameKey, error) {
	aid, err := unpackActorData("ActorPoolNameKey", b, tagPoolName)
	return ActorPoolNameKey{ActorID: aid}, err
}

func (ActorPoolNameKey) Encode(v string) []byte          { return encodeString(v) }
func (ActorPoolNameKey) Decode(b []byte) (string, error) { return decodeString("ActorPoolNameKey", b) }

// ActorVersionKey is (ACTOR, DATA, actor_id, VERSION) → uint32 big-endian: 1 = actor workflow v1
// (runners), 2 = actor2 (envoys).
// Absent means 1.
type ActorVersionKey struct{ ActorID id.ID }

func (k ActorVersionKey) Pack() []byte { return actorDataKey(k.ActorID, tagVersion) }

// UnpackActorVersionKey parses a ActorVersionKey, checking every constant segment.
func UnpackActorVersionKey(b []byte) (ActorVersionKey, error) {
	aid, err := unpackActorData("ActorVersionKey", b, tagVersion)
	return ActorVersionKey{ActorID: aid}, err
}

func (ActorVersionKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (ActorVersionKey) Decode(b []byte) (uint32, error) { return decodeU32("ActorVersionKey", b) }

// ActorGenerationKey is (ACTOR, DATA, actor_id, GENERATION) → uint32 big-endian: the generation,
// bumped at each start (actor2).
type ActorGenerationKey struct{ ActorID id.ID }

func (k ActorGenerationKey) Pack() []byte { return actorDataKey(k.ActorID, tagGeneration) }

// UnpackActorGenerationKey parses a ActorGenerationKey, checking every constant segment.
func UnpackActorGenerationKey(b []byte) (ActorGenerationKey, error) {
	aid, err := unpackActorData("ActorGenerationKey", b, tagGeneration)
	return ActorGenerationKey{ActorID: aid}, err
}

func (ActorGenerationKey) Encode(v uint32) []byte          { return encodeU32(v) }
func (ActorGenerationKey) Decode(b []byte) (uint32, error) { return decodeU32("ActorGenerationKey", b) }

// ActorRunnerIDKey is (ACTOR, DATA, actor_id, RUNNER_ID) → id.ID, 19 raw bytes: the runner it is
// allocated to; present while allocated (v1).
type ActorRunnerIDKey struct{ ActorID id.ID }

func (k ActorRunnerIDKey) Pack() []byte { return actorDataKey(k.ActorID, tagRunnerID) }

// UnpackActorRunnerIDKey parses a ActorRunnerIDKey, checking every constant segment.
func UnpackActorRunnerIDKey(b []byte) (ActorRunnerIDKey, error) {
	aid, err := unpackActorData("ActorRunnerIDKey", b, tagRunnerID)
	return ActorRunnerIDKey{ActorID: aid}, err
}

func (ActorRunnerIDKey) Encode(v id.ID) []byte          { return encodeID(v) }
func (ActorRunnerIDKey) Decode(b []byte) (id.ID, error) { return decodeID("ActorRunnerIDKey", b) }

// ActorEnvoyKeyKey is (ACTOR, DATA, actor_id, ENVOY_KEY) → string, raw UTF-8: the envoy it runs
// on, set when it becomes connectable (actor2).
type ActorEnvoyKeyKey struct{ ActorID id.ID }

func (k ActorEnvoyKeyKey) Pack() []byte { return actorDataKey(k.ActorID, tagEnvoyKey) }

// UnpackActorEnvoyKeyKey parses a ActorEnvoyKeyKey, checking every constant segment.
func UnpackActorEnvoyKeyKey(b []byte) (ActorEnvoyKeyKey, error) {
	aid, err := unpackActorData("ActorEnvoyKeyKey", b, tagEnvoyKey)
	return ActorEnvoyKeyKey{ActorID: aid}, err
}

func (ActorEnvoyKeyKey) Encode(v string) []byte          { return encodeString(v) }
func (ActorEnvoyKeyKey) Decode(b []byte) (string, error) { return decodeString("ActorEnvoyKeyKey", b) }

// ActorConnectableKey is (ACTOR, DATA, actor_id, CONNECTABLE) → empty: present ⇔ routable.
type ActorConnectableKey struct{ ActorID id.ID }

func (k ActorConnectableKey) Pack() []byte { return actorDataKey(k.ActorID, tagConnectable) }

// UnpackActorConnectableKey parses a ActorConnectableKey, checking every constant segment.
func UnpackActorConnectableKey(b []byte) (ActorConnectableKey, error) {
	aid, err := unpackActorData("ActorConnectableKey", b, tagConnectable)
	return ActorConnectableKey{ActorID: aid}, err
}

func (ActorConnectableKey) Encode(Empty) []byte { return encodeEmpty() }
func (ActorConnectableKey) Decode(b []byte) (Empty, error) {
	return decodeEmpty("ActorConnectableKey", b)
}

// ActorSleepTsKey is (ACTOR, DATA, actor_id, SLEEP_TS) → int64 big-endian: unix ms it went to
// sleep; present ⇔ sleeping.
type ActorSleepTsKey struct{ ActorID id.ID }

func (k ActorSleepTsKey) Pack() []byte { return actorDataKey(k.ActorID, tagSleepTs) }

// UnpackActorSleepTsKey parses a ActorSleepTsKey, checking every constant segment.
func UnpackActorSleepTsKey(b []byte) (ActorSleepTsKey, error) {
	aid, err := unpackActorData("ActorSleepTsKey", b, tagSleepTs)
	return ActorSleepTsKey{ActorID: aid}, err
}

func (ActorSleepTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (ActorSleepTsKey) Decode(b []byte) (int64, error) { return decodeI64("ActorSleepTsKey", b) }

// ActorDestroyTsKey is (ACTOR, DATA, actor_id, DESTROY_TS) → int64 big-endian: unix ms it was
// destroyed; present ⇔ destroyed.
type ActorDestroyTsKey struct{ ActorID id.ID }

func (k ActorDestroyTsKey) Pack() []byte { return actorDataKey(k.ActorID, tagDestroyTs) }

// UnpackActorDestroyTsKey parses a ActorDestroyTsKey, checking every constant segment.
func UnpackActorDestroyTsKey(b []byte) (ActorDestroyTsKey, error) {
	aid, err := unpackActorData("ActorDestroyTsKey", b, tagDestroyTs)
	return ActorDestroyTsKey{ActorID: aid}, err
}

func (ActorDestroyTsKey) Encode(v int64) []byte          { return encodeI64(v) }
func (ActorDestroyTsKey) Decode(b []byte) (int64, error) { return decodeI64("ActorDestroyTsKey", b) }
