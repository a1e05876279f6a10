package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Actor index keys of a namespace (docs/design.md, "Key space"), in the
// pegboard subspace. The by-name indexes sort by (create_ts, actor_id) within
// a name: lists scan them in reverse, newest first, and page with
// CreateTsRange.Before. berth has no workflow engine: where the value is a
// workflow id, it is the zero ID or the actor's own id.

// ActiveActorKey is (NAMESPACE, namespace_id, ACTOR, BY_NAME, ACTIVE, name,
// create_ts, actor_id) → workflow id: the actors of one name not destroyed.
type ActiveActorKey struct {
	Namespace id.ID
	Name      string
	CreateTs  int64
	ActorID   id.ID
}

func (k ActiveActorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagActor, tagByName, tagActive, k.Name, k.CreateTs, k.ActorID})
}

// UnpackActiveActorKey parses an ActiveActorKey, checking every constant segment.
func UnpackActiveActorKey(b []byte) (ActiveActorKey, error) {
	t, err := unpack("ActiveActorKey", pegboard, b, tagNamespace, anyID, tagActor, tagByName, tagActive, anyString, anyInt, anyID)
	if err != nil {
		return ActiveActorKey{}, err
	}
	return ActiveActorKey{Namespace: t[1].(id.ID), Name: t[5].(string), CreateTs: t[6].(int64), ActorID: t[7].(id.ID)}, nil
}

func (ActiveActorKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (ActiveActorKey) Decode(b []byte) (id.ID, error) { return decodeID("ActiveActorKey", b) }

// ActiveActorKeyRange is the ActiveActorKey entries of actors named name in
// namespace ns.
func ActiveActorKeyRange(ns id.ID, name string) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagActor, tagByName, tagActive, name})
}

// AllActorKey is (NAMESPACE, namespace_id, ACTOR, BY_NAME, ALL, name,
// create_ts, actor_id) → workflow id: every actor of one name, never deleted.
type AllActorKey struct {
	Namespace id.ID
	Name      string
	CreateTs  int64
	ActorID   id.ID
}

func (k AllActorKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagActor, tagByName, tagAll, k.Name, k.CreateTs, k.ActorID})
}

// UnpackAllActorKey parses an AllActorKey, checking every constant segment.
func UnpackAllActorKey(b []byte) (AllActorKey, error) {
	t, err := unpack("AllActorKey", pegboard, b, tagNamespace, anyID, tagActor, tagByName, tagAll, anyString, anyInt, anyID)
	if err != nil {
		return AllActorKey{}, err
	}
	return AllActorKey{Namespace: t[1].(id.ID), Name: t[5].(string), CreateTs: t[6].(int64), ActorID: t[7].(id.ID)}, nil
}

func (AllActorKey) Encode(workflowID id.ID) []byte { return encodeID(workflowID) }
func (AllActorKey) Decode(b []byte) (id.ID, error) { return decodeID("AllActorKey", b) }

// AllActorKeyRange is the AllActorKey entries of actors named name in
// namespace ns.
func AllActorKeyRange(ns id.ID, name string) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagActor, tagByName, tagAll, name})
}

// ActorByKeyKey is (NAMESPACE, namespace_id, ACTOR, BY_NAME_AND_KEY, name,
// key, create_ts, actor_id) → ActorByKeyValue: the actors created with one
// name and key. An entry is rewritten with IsDestroyed set when its actor is
// destroyed and never deleted. Reserving a key reads ActorByKeyKeyRange
// serializably, so two concurrent creations with one key conflict.
type ActorByKeyKey struct {
	Namespace id.ID
	Name      string
	Key       string
	CreateTs  int64
	ActorID   id.ID
}

func (k ActorByKeyKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagActor, tagByNameAndKey, k.Name, k.Key, k.CreateTs, k.ActorID})
}

// UnpackActorByKeyKey parses an ActorByKeyKey, checking every constant segment.
func UnpackActorByKeyKey(b []byte) (ActorByKeyKey, error) {
	t, err := unpack("ActorByKeyKey", pegboard, b, tagNamespace, anyID, tagActor, tagByNameAndKey, anyString, anyString, anyInt, anyID)
	if err != nil {
		return ActorByKeyKey{}, err
	}
	return ActorByKeyKey{Namespace: t[1].(id.ID), Name: t[4].(string), Key: t[5].(string), CreateTs: t[6].(int64), ActorID: t[7].(id.ID)}, nil
}

func (ActorByKeyKey) Encode(v ActorByKeyValue) []byte { return encodeActorByKey(v) }
func (ActorByKeyKey) Decode(b []byte) (ActorByKeyValue, error) {
	return decodeActorByKey("ActorByKeyKey", b)
}

// ActorByKeyKeyRange is the ActorByKeyKey entries of name and key in
// namespace ns.
func ActorByKeyKeyRange(ns id.ID, name, key string) CreateTsRange[id.ID] {
	return newCreateTsRange[id.ID](pegboard, tuple.Tuple{tagNamespace, ns, tagActor, tagByNameAndKey, name, key})
}

// ActorNameKey is (NAMESPACE, namespace_id, ACTOR, NAME, name) →
// ActorNameValue: the actor names of the namespace with their metadata,
// listed in name order.
type ActorNameKey struct {
	Namespace id.ID
	Name      string
}

func (k ActorNameKey) Pack() []byte {
	return pegboard.Pack(tuple.Tuple{tagNamespace, k.Namespace, tagActor, tagName, k.Name})
}

// UnpackActorNameKey parses an ActorNameKey, checking every constant segment.
func UnpackActorNameKey(b []byte) (ActorNameKey, error) {
	t, err := unpack("ActorNameKey", pegboard, b, tagNamespace, anyID, tagActor, tagName, anyString)
	if err != nil {
		return ActorNameKey{}, err
	}
	return ActorNameKey{Namespace: t[1].(id.ID), Name: t[4].(string)}, nil
}

func (ActorNameKey) Encode(v ActorNameValue) []byte { return encodeActorName(v) }
func (ActorNameKey) Decode(b []byte) (ActorNameValue, error) {
	return decodeActorName("ActorNameKey", b)
}

// ActorNameKeyRange is the ActorNameKey entries of namespace ns.
func ActorNameKeyRange(ns id.ID) NameRange {
	return NameRange{prefix: pegboard.Pack(tuple.Tuple{tagNamespace, ns, tagActor, tagName})}
}
