package keys

import (
	"fmt"
	"maps"
	"slices"

	"github.com/berthhq/berth/sdk/bare"
)

// runnerConfigVersion is the schema version of RunnerConfig values:
// pegboard.namespace.runner_config.v6 (engine/sdks/schemas/data). berth
// writes and reads v6 only; Rivet's v1–v5 are not read. Add a version, never
// change one.
const runnerConfigVersion = 6

// Union tags of RunnerConfigKind in the v6 schema. They equal the
// RunnerConfigVariant numbers.
const (
	runnerConfigTagServerless = 0
	runnerConfigTagNormal     = 1
)

// RunnerConfig is the value of [RunnerConfigDataKey] and
// [RunnerConfigByVariantKey]: a pool's config as stored, every field set
// (the API fills its defaults before storing). Exactly one of Normal and
// Serverless is set.
//
// Stored as versioned BARE, the layout of Rivet's v6 schema:
//
//	type Serverless struct { url: str; headers: map<str><str>; requestLifespan: u32;
//	  maxConcurrentActors: u64; drainGracePeriod: u32; slotsPerRunner: u32; minRunners: u32;
//	  maxRunners: u32; runnersMargin: u32; metadataPollInterval: optional<u64>;
//	  drainOnVersionUpgrade: bool; actorEvictionDelay: u32; actorEvictionPeriod: u32;
//	  actorEvictionRate: f32 }
//	type Normal struct { drainOnVersionUpgrade: bool; actorEvictionDelay: u32;
//	  actorEvictionPeriod: u32; actorEvictionRate: f32 }
//	type RunnerConfigKind union { Serverless | Normal }
//	type RunnerConfig struct { kind: RunnerConfigKind; metadata: optional<str> }
//
// after the 2-byte little-endian version 6. berth writes the header map in
// key order, so one config always encodes to the same bytes; it reads maps
// in any order (Rivet writes them in hash order) and rejects duplicate keys.
type RunnerConfig struct {
	Normal     *NormalRunnerConfig
	Serverless *ServerlessRunnerConfig
	// Metadata is JSON text, stored as given; nil when the config has none.
	// This layer does not parse it.
	Metadata *string
}

// RunnerConfigCommon is what both kinds carry: draining older versions and
// the pace of actor eviction.
type RunnerConfigCommon struct {
	// DrainOnVersionUpgrade drains runners of older versions when a newer
	// version connects.
	DrainOnVersionUpgrade bool
	ActorEvictionDelay    uint32  // seconds
	ActorEvictionPeriod   uint32  // seconds
	ActorEvictionRate     float32 // actors per second; never NaN
}

// NormalRunnerConfig is a pool whose runners connect by themselves.
type NormalRunnerConfig struct {
	RunnerConfigCommon
}

// ServerlessRunnerConfig is a pool whose runners the engine starts by
// calling URL.
type ServerlessRunnerConfig struct {
	URL                  string
	Headers              map[string]string // sent with every request to URL; nil reads as empty
	RequestLifespan      uint32            // seconds
	MaxConcurrentActors  uint64
	DrainGracePeriod     uint32 // seconds
	SlotsPerRunner       uint32
	MinRunners           uint32
	MaxRunners           uint32
	RunnersMargin        uint32
	MetadataPollInterval *uint64 // milliseconds; nil means the engine's default
	RunnerConfigCommon
}

// Variant returns the config's variant. A config with neither kind set (an
// invalid value) reports RunnerConfigNormal.
func (c RunnerConfig) Variant() RunnerConfigVariant {
	if c.Serverless != nil {
		return RunnerConfigServerless
	}
	return RunnerConfigNormal
}

// Common returns the fields both kinds carry.
func (c RunnerConfig) Common() RunnerConfigCommon {
	switch {
	case c.Serverless != nil:
		return c.Serverless.RunnerConfigCommon
	case c.Normal != nil:
		return c.Normal.RunnerConfigCommon
	}
	return RunnerConfigCommon{}
}

// encodeRunnerConfig encodes c. Callers store only validated configs
// (ops/runnerconfig checks them): a config with both or neither kind set, or
// a NaN eviction rate, which BARE cannot carry, is a programming error and
// panics rather than being stored as bytes no reader accepts.
func encodeRunnerConfig(c RunnerConfig) []byte {
	if (c.Normal == nil) == (c.Serverless == nil) {
		panic("keys: RunnerConfig must have exactly one of Normal and Serverless")
	}
	var w bare.Writer
	w.U16(runnerConfigVersion)
	if s := c.Serverless; s != nil {
		w.UnionTag(runnerConfigTagServerless)
		w.String(s.URL)
		w.MapLen(len(s.Headers))
		for _, k := range slices.Sorted(maps.Keys(s.Headers)) {
			w.String(k)
			w.String(s.Headers[k])
		}
		w.U32(s.RequestLifespan)
		w.U64(s.MaxConcurrentActors)
		w.U32(s.DrainGracePeriod)
		w.U32(s.SlotsPerRunner)
		w.U32(s.MinRunners)
		w.U32(s.MaxRunners)
		w.U32(s.RunnersMargin)
		w.Optional(s.MetadataPollInterval != nil)
		if s.MetadataPollInterval != nil {
			w.U64(*s.MetadataPollInterval)
		}
		writeRunnerConfigCommon(&w, s.RunnerConfigCommon)
	} else {
		w.UnionTag(runnerConfigTagNormal)
		writeRunnerConfigCommon(&w, c.Normal.RunnerConfigCommon)
	}
	w.Optional(c.Metadata != nil)
	if c.Metadata != nil {
		w.String(*c.Metadata)
	}
	if err := w.Err(); err != nil {
		panic(fmt.Sprintf("keys: RunnerConfig cannot be encoded: %v", err))
	}
	return w.Bytes()
}

func writeRunnerConfigCommon(w *bare.Writer, c RunnerConfigCommon) {
	w.Bool(c.DrainOnVersionUpgrade)
	w.U32(c.ActorEvictionDelay)
	w.U32(c.ActorEvictionPeriod)
	w.F32(c.ActorEvictionRate)
}

func readRunnerConfigCommon(r *bare.Reader) RunnerConfigCommon {
	return RunnerConfigCommon{
		DrainOnVersionUpgrade: r.Bool(),
		ActorEvictionDelay:    r.U32(),
		ActorEvictionPeriod:   r.U32(),
		ActorEvictionRate:     r.F32(),
	}
}

func decodeRunnerConfig(name string, b []byte) (RunnerConfig, error) {
	r := bare.NewReader(b)
	if v := bare.ReadVersion(r); r.Err() == nil && v != runnerConfigVersion {
		r.FailAt(0, "unknown version %d", v)
	}
	var c RunnerConfig
	tagAt := r.Offset()
	switch tag := r.UnionTag(); {
	case r.Err() != nil:
	case tag == runnerConfigTagServerless:
		s := &ServerlessRunnerConfig{URL: r.Str()}
		s.Headers = map[string]string{}
		_ = bare.ReadMap(r, func(r *bare.Reader) string {
			k := r.Str()
			s.Headers[k] = r.Str()
			return k
		})
		s.RequestLifespan = r.U32()
		s.MaxConcurrentActors = r.U64()
		s.DrainGracePeriod = r.U32()
		s.SlotsPerRunner = r.U32()
		s.MinRunners = r.U32()
		s.MaxRunners = r.U32()
		s.RunnersMargin = r.U32()
		if r.Optional() {
			v := r.U64()
			s.MetadataPollInterval = &v
		}
		s.RunnerConfigCommon = readRunnerConfigCommon(r)
		c.Serverless = s
	case tag == runnerConfigTagNormal:
		c.Normal = &NormalRunnerConfig{RunnerConfigCommon: readRunnerConfigCommon(r)}
	default:
		r.FailAt(tagAt, "unknown RunnerConfigKind tag %d", tag)
	}
	if r.Optional() {
		m := r.Str()
		c.Metadata = &m
	}
	if err := r.Done(); err != nil {
		return RunnerConfig{}, badValue(name, "%v", err)
	}
	return c, nil
}
