package runnerconfig

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/berthhq/berth/keys"
)

// Response is a stored config as the API returns it (Rivet's
// RunnerConfigResponse): the config flattened with every field set, as
// stored, then protocol_version (null until known). Rivet's
// runner_pool_error is left out: berth runs no serverless pools yet, so
// there is never one to report.
//
//	{"normal": {"drain_on_version_upgrade": true, "actor_eviction_delay": 0,
//	  "actor_eviction_period": 0, "actor_eviction_rate": 1}, "protocol_version": null}
//	{"serverless": {"url": ..., "headers": {}, "request_lifespan": 600, ...},
//	  "metadata": {...}, "protocol_version": 6}
//
// metadata_poll_interval and metadata appear only when set.
type Response struct {
	Config          keys.RunnerConfig
	ProtocolVersion *uint16
	// PoolError is the pool's runner_pool_error, shown while it has one.
	PoolError json.RawMessage
}

// NewResponse returns the response form of e.
func NewResponse(e Entry) Response {
	return Response{Config: e.Config, ProtocolVersion: e.ProtocolVersion, PoolError: e.PoolError}
}

type responseJSON struct {
	Normal          *normalJSON     `json:"normal,omitempty"`
	Serverless      *serverlessJSON `json:"serverless,omitempty"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	ProtocolVersion *uint16         `json:"protocol_version"`
	PoolError       json.RawMessage `json:"runner_pool_error,omitempty"`
}

type commonJSON struct {
	DrainOnVersionUpgrade bool    `json:"drain_on_version_upgrade"`
	ActorEvictionDelay    uint32  `json:"actor_eviction_delay"`
	ActorEvictionPeriod   uint32  `json:"actor_eviction_period"`
	ActorEvictionRate     float32 `json:"actor_eviction_rate"`
}

type normalJSON struct {
	commonJSON
}

type serverlessJSON struct {
	URL                  string            `json:"url"`
	Headers              map[string]string `json:"headers"`
	RequestLifespan      uint32            `json:"request_lifespan"`
	MaxConcurrentActors  uint64            `json:"max_concurrent_actors"`
	DrainGracePeriod     uint32            `json:"drain_grace_period"`
	SlotsPerRunner       uint32            `json:"slots_per_runner"`
	MinRunners           uint32            `json:"min_runners"`
	MaxRunners           uint32            `json:"max_runners"`
	RunnersMargin        uint32            `json:"runners_margin"`
	MetadataPollInterval *uint64           `json:"metadata_poll_interval,omitempty"`
	commonJSON
}

func toCommonJSON(c keys.RunnerConfigCommon) commonJSON {
	return commonJSON{
		DrainOnVersionUpgrade: c.DrainOnVersionUpgrade, ActorEvictionDelay: c.ActorEvictionDelay,
		ActorEvictionPeriod: c.ActorEvictionPeriod, ActorEvictionRate: c.ActorEvictionRate,
	}
}

// MarshalJSON encodes the response form described on Response.
func (r Response) MarshalJSON() ([]byte, error) {
	out := responseJSON{ProtocolVersion: r.ProtocolVersion, PoolError: r.PoolError}
	c := r.Config
	if c.Metadata != nil {
		out.Metadata = json.RawMessage(*c.Metadata)
	}
	switch {
	case c.Serverless != nil:
		s := c.Serverless
		headers := s.Headers
		if headers == nil {
			headers = map[string]string{}
		}
		out.Serverless = &serverlessJSON{
			URL: s.URL, Headers: headers, RequestLifespan: s.RequestLifespan, MaxConcurrentActors: s.MaxConcurrentActors,
			DrainGracePeriod: s.DrainGracePeriod, SlotsPerRunner: s.SlotsPerRunner, MinRunners: s.MinRunners,
			MaxRunners: s.MaxRunners, RunnersMargin: s.RunnersMargin, MetadataPollInterval: s.MetadataPollInterval,
			commonJSON: toCommonJSON(s.RunnerConfigCommon),
		}
	case c.Normal != nil:
		out.Normal = &normalJSON{toCommonJSON(c.Normal.RunnerConfigCommon)}
	}
	return json.Marshal(out)
}

// UnmarshalJSON decodes the response form, strictly (as ParseRequest, with no
// defaults needed since every field is given, and no rule checked: the
// config was checked when stored). runner_pool_error, which berth never
// sends, is accepted and dropped.
func (r *Response) UnmarshalJSON(b []byte) error {
	m, err := objectFields(b, "", append(slices.Clone(rootFields), "protocol_version", "runner_pool_error"))
	if err != nil {
		return err
	}
	var pv *uint16
	if v, ok := m["protocol_version"]; ok {
		if err := decodeField(v, "protocol_version", &pv); err != nil {
			return err
		}
	}
	var poolErr json.RawMessage
	if v, ok := m["runner_pool_error"]; ok && string(v) != "null" {
		poolErr = v
	}
	rest := maps.Clone(m)
	delete(rest, "protocol_version")
	delete(rest, "runner_pool_error")
	raw, err := json.Marshal(rest)
	if err != nil {
		return err
	}
	cfg, err := decodeRequest(raw, "")
	if err != nil {
		return err
	}
	*r = Response{Config: cfg, ProtocolVersion: pv, PoolError: poolErr}
	return nil
}
