package keys

import (
	"fmt"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/tuple"
)

// Runner-config keys (docs/design.md, "Key space"), in the namespace
// subspace (RIVET, NAMESPACE): the config of each (namespace, runner name)
// under (RUNNER, CONFIG, DATA, ns, name), a copy under (RUNNER, CONFIG,
// BY_VARIANT, ns, variant, name) for listing one variant, and the pool's
// envoy protocol version under (RUNNER, CONFIG, DATA, ns, name,
// PROTOCOL_VERSION). Whoever writes a config writes the data key and its
// by-variant copy in one transaction, and clears the copy under the old
// variant when the variant changes. The protocol version is written by
// whoever learns it (an envoy at connect, the serverless metadata poller) and
// outlives a deleted config, as in Rivet.
//
// Rivet's (RUNNER, CONFIG, GLOBAL, DATA, dc_label, ns, name) is an Epoxy key,
// not a udb key; berth has no Epoxy and no such key.

// RunnerConfigVariant is the kind of a runner config, numbered as Rivet
// numbers it in the by-variant key (its RunnerConfigVariant: Serverless = 0,
// Normal = 1). The numbers are stored; never change them.
type RunnerConfigVariant uint8

const (
	// RunnerConfigServerless is a pool whose runners the engine starts by
	// calling the pool's URL.
	RunnerConfigServerless RunnerConfigVariant = 0
	// RunnerConfigNormal is a pool whose runners connect by themselves.
	RunnerConfigNormal RunnerConfigVariant = 1
)

// RunnerConfigVariants lists every variant, in key order.
var RunnerConfigVariants = []RunnerConfigVariant{RunnerConfigServerless, RunnerConfigNormal}

// String returns the variant's API name, "serverless" or "normal".
func (v RunnerConfigVariant) String() string {
	switch v {
	case RunnerConfigServerless:
		return "serverless"
	case RunnerConfigNormal:
		return "normal"
	}
	return fmt.Sprintf("RunnerConfigVariant(%d)", uint8(v))
}

// Valid reports whether v is a known variant.
func (v RunnerConfigVariant) Valid() bool {
	return v == RunnerConfigServerless || v == RunnerConfigNormal
}

// ParseRunnerConfigVariant parses an API name, "serverless" or "normal".
func ParseRunnerConfigVariant(s string) (RunnerConfigVariant, bool) {
	switch s {
	case "serverless":
		return RunnerConfigServerless, true
	case "normal":
		return RunnerConfigNormal, true
	}
	return 0, false
}

// MarshalText returns the API name, so that the variant binds as a query
// parameter and encodes as a JSON string.
func (v RunnerConfigVariant) MarshalText() ([]byte, error) {
	if !v.Valid() {
		return nil, fmt.Errorf("unknown runner config variant %d", uint8(v))
	}
	return []byte(v.String()), nil
}

// UnmarshalText parses the API name.
func (v *RunnerConfigVariant) UnmarshalText(b []byte) error {
	p, ok := ParseRunnerConfigVariant(string(b))
	if !ok {
		return fmt.Errorf("want normal or serverless, got %q", b)
	}
	*v = p
	return nil
}

// RunnerConfigDataKey is [ns] (RUNNER, CONFIG, DATA, namespace_id, name) →
// RunnerConfig (versioned BARE, see RunnerConfig): the config of one runner
// name (pool) in a namespace.
type RunnerConfigDataKey struct {
	Namespace id.ID
	Name      string
}

func (k RunnerConfigDataKey) Pack() []byte {
	return namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagData, k.Namespace, k.Name})
}

// UnpackRunnerConfigDataKey parses a RunnerConfigDataKey, checking every constant segment.
func UnpackRunnerConfigDataKey(b []byte) (RunnerConfigDataKey, error) {
	t, err := unpack("RunnerConfigDataKey", namespaceSub, b, tagRunner, tagConfig, tagData, anyID, anyString)
	if err != nil {
		return RunnerConfigDataKey{}, err
	}
	return RunnerConfigDataKey{Namespace: t[3].(id.ID), Name: t[4].(string)}, nil
}

func (RunnerConfigDataKey) Encode(v RunnerConfig) []byte { return encodeRunnerConfig(v) }
func (RunnerConfigDataKey) Decode(b []byte) (RunnerConfig, error) {
	return decodeRunnerConfig("RunnerConfigDataKey", b)
}

// RunnerConfigDataKeyRange is every runner config of namespace ns, in name
// order. The range also holds the RunnerConfigProtocolVersionKey entries:
// each sorts right after its name's RunnerConfigDataKey (if that exists), so
// a scan meets a config and then its protocol version. NameRange.After(name)
// starts just after name's data key, so its first entry may be name's
// protocol version.
func RunnerConfigDataKeyRange(ns id.ID) NameRange {
	return NameRange{prefix: namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagData, ns})}
}

// RunnerConfigProtocolVersionKey is [ns] (RUNNER, CONFIG, DATA, namespace_id,
// name, PROTOCOL_VERSION) → uint16 big-endian: the envoy protocol version of
// the pool. Present ⇒ the pool is served by envoys, and its new actors are
// placed on envoys (docs/design.md, "Lifecycle").
type RunnerConfigProtocolVersionKey struct {
	Namespace id.ID
	Name      string
}

func (k RunnerConfigProtocolVersionKey) Pack() []byte {
	return namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagData, k.Namespace, k.Name, tagProtocolVersion})
}

// UnpackRunnerConfigProtocolVersionKey parses a RunnerConfigProtocolVersionKey, checking every
// constant segment.
func UnpackRunnerConfigProtocolVersionKey(b []byte) (RunnerConfigProtocolVersionKey, error) {
	t, err := unpack("RunnerConfigProtocolVersionKey", namespaceSub, b,
		tagRunner, tagConfig, tagData, anyID, anyString, tagProtocolVersion)
	if err != nil {
		return RunnerConfigProtocolVersionKey{}, err
	}
	return RunnerConfigProtocolVersionKey{Namespace: t[3].(id.ID), Name: t[4].(string)}, nil
}

func (RunnerConfigProtocolVersionKey) Encode(v uint16) []byte { return encodeU16(v) }
func (RunnerConfigProtocolVersionKey) Decode(b []byte) (uint16, error) {
	return decodeU16("RunnerConfigProtocolVersionKey", b)
}

// RunnerConfigByVariantKey is [ns] (RUNNER, CONFIG, BY_VARIANT, namespace_id,
// variant, name) → RunnerConfig: a copy of the config under its variant, so
// that one variant lists in name order without reading the other. The
// variant segment is the RunnerConfigVariant number.
type RunnerConfigByVariantKey struct {
	Namespace id.ID
	Variant   RunnerConfigVariant
	Name      string
}

func (k RunnerConfigByVariantKey) Pack() []byte {
	return namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagByVariant, k.Namespace, int64(k.Variant), k.Name})
}

// UnpackRunnerConfigByVariantKey parses a RunnerConfigByVariantKey, checking every constant
// segment and that the variant is known.
func UnpackRunnerConfigByVariantKey(b []byte) (RunnerConfigByVariantKey, error) {
	const name = "RunnerConfigByVariantKey"
	t, err := unpack(name, namespaceSub, b, tagRunner, tagConfig, tagByVariant, anyID, anyInt, anyString)
	if err != nil {
		return RunnerConfigByVariantKey{}, err
	}
	v := t[4].(int64)
	if v < 0 || v > 255 || !RunnerConfigVariant(v).Valid() {
		return RunnerConfigByVariantKey{}, badKey(name, b, "unknown variant %d", v)
	}
	return RunnerConfigByVariantKey{Namespace: t[3].(id.ID), Variant: RunnerConfigVariant(v), Name: t[5].(string)}, nil
}

func (RunnerConfigByVariantKey) Encode(v RunnerConfig) []byte { return encodeRunnerConfig(v) }
func (RunnerConfigByVariantKey) Decode(b []byte) (RunnerConfig, error) {
	return decodeRunnerConfig("RunnerConfigByVariantKey", b)
}

// RunnerConfigByVariantKeyRange is the configs of one variant in namespace
// ns, in name order.
func RunnerConfigByVariantKeyRange(ns id.ID, v RunnerConfigVariant) NameRange {
	return NameRange{prefix: namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagByVariant, ns, int64(v)})}
}

// RunnerConfigByVariantAllRange is the by-variant copies of every namespace
// (both variants), for a scan of every pool of the datacenter (the
// serverless metadata poller).
func RunnerConfigByVariantAllRange() (begin, end []byte) {
	return prefixRange(namespaceSub.Pack(tuple.Tuple{tagRunner, tagConfig, tagByVariant}))
}
