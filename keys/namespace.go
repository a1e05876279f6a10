package keys

import (
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Namespace keys (docs/design.md, "Key space"), in the namespace subspace
// (RIVET, NAMESPACE): the record under (DATA, namespace_id) and the unique
// name index.

func namespaceDataKey(nid id.ID, tag int) []byte {
	return namespaceSub.Pack(tuple.Tuple{tagData, nid, tag})
}

func unpackNamespaceData(name string, b []byte, tag int) (id.ID, error) {
	t, err := unpack(name, namespaceSub, b, tagData, anyID, tag)
	if err != nil {
		return id.ID{}, err
	}
	return t[1].(id.ID), nil
}

// NamespaceNameKey is [ns] (DATA, namespace_id, NAME) → string, raw UTF-8: the unique name.
type NamespaceNameKey struct{ NamespaceID id.ID }

func (k NamespaceNameKey) Pack() []byte { return namespaceDataKey(k.NamespaceID, tagName) }

// UnpackNamespaceNameKey parses a NamespaceNameKey, checking every constant segment.
func UnpackNamespaceNameKey(b []byte) (NamespaceNameKey, error) {
	nid, err := unpackNamespaceData("NamespaceNameKey", b, tagName)
	return NamespaceNameKey{NamespaceID: nid}, err
}

func (NamespaceNameKey) Encode(v string) []byte          { return encodeString(v) }
func (NamespaceNameKey) Decode(b []byte) (string, error) { return decodeString("NamespaceNameKey", b) }

// NamespaceDisplayNameKey is [ns] (DATA, namespace_id, DISPLAY_NAME) → string, raw UTF-8: the
// display name.
type NamespaceDisplayNameKey struct{ NamespaceID id.ID }

func (k NamespaceDisplayNameKey) Pack() []byte {
	return namespaceDataKey(k.NamespaceID, tagDisplayName)
}

// UnpackNamespaceDisplayNameKey parses a NamespaceDisplayNameKey, checking every constant segment.
func UnpackNamespaceDisplayNameKey(b []byte) (NamespaceDisplayNameKey, error) {
	nid, err := unpackNamespaceData("NamespaceDisplayNameKey", b, tagDisplayName)
	return NamespaceDisplayNameKey{NamespaceID: nid}, err
}

func (NamespaceDisplayNameKey) Encode(v string) []byte { return encodeString(v) }
func (NamespaceDisplayNameKey) Decode(b []byte) (string, error) {
	return decodeString("NamespaceDisplayNameKey", b)
}

// NamespaceCreateTsKey is [ns] (DATA, namespace_id, CREATE_TS) → int64 big-endian: unix ms when it
// was created.
type NamespaceCreateTsKey struct{ NamespaceID id.ID }

func (k NamespaceCreateTsKey) Pack() []byte { return namespaceDataKey(k.NamespaceID, tagCreateTs) }

// UnpackNamespaceCreateTsKey parses a NamespaceCreateTsKey, checking every constant segment.
func UnpackNamespaceCreateTsKey(b []byte) (NamespaceCreateTsKey, error) {
	nid, err := unpackNamespaceData("NamespaceCreateTsKey", b, tagCreateTs)
	return NamespaceCreateTsKey{NamespaceID: nid}, err
}

func (NamespaceCreateTsKey) Encode(v int64) []byte { return encodeI64(v) }
func (NamespaceCreateTsKey) Decode(b []byte) (int64, error) {
	return decodeI64("NamespaceCreateTsKey", b)
}

// NamespaceByNameKey is [ns] (BY_NAME, name) → id.ID, 19 raw bytes: the
// namespace with that name. Names are unique: creation checks this key with a
// serializable read, so two concurrent creations of one name conflict.
type NamespaceByNameKey struct{ Name string }

func (k NamespaceByNameKey) Pack() []byte { return namespaceSub.Pack(tuple.Tuple{tagByName, k.Name}) }

// UnpackNamespaceByNameKey parses a NamespaceByNameKey, checking every constant segment.
func UnpackNamespaceByNameKey(b []byte) (NamespaceByNameKey, error) {
	t, err := unpack("NamespaceByNameKey", namespaceSub, b, tagByName, anyString)
	if err != nil {
		return NamespaceByNameKey{}, err
	}
	return NamespaceByNameKey{Name: t[1].(string)}, nil
}

func (NamespaceByNameKey) Encode(v id.ID) []byte { return encodeID(v) }
func (NamespaceByNameKey) Decode(b []byte) (id.ID, error) {
	return decodeID("NamespaceByNameKey", b)
}

// NamespaceByNameKeyRange is every namespace by name, in name order.
func NamespaceByNameKeyRange() NameRange {
	return NameRange{prefix: namespaceSub.Pack(tuple.Tuple{tagByName})}
}
