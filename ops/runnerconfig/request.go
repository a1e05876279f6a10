package runnerconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/rerr"
)

// The API's defaults for fields a request leaves out (the Rivet engine's). A
// stored config has every field set.
const (
	DefaultDrainOnVersionUpgrade = true
	DefaultActorEvictionDelay    = 0    // seconds
	DefaultActorEvictionPeriod   = 0    // seconds
	DefaultActorEvictionRate     = 1.0  // actors per second
	DefaultDrainGracePeriod      = 1800 // seconds: the runner stop window
	DefaultSlotsPerRunner        = 1
	DefaultMinRunners            = 0
	DefaultMaxRunners            = 1000
	DefaultRunnersMargin         = 0
	// max_concurrent_actors defaults to max_runners (itself defaulting to DefaultMaxRunners).
)

// The request JSON. A runner config is externally tagged and flattened:
//
//	{"normal": {...}, "metadata"?: any, "drain_on_version_upgrade"?: bool}
//	{"serverless": {"url": ..., "request_lifespan": ..., ...}, "metadata"?: any, ...}
//
// Exactly one of normal and serverless. Every other field is optional (null
// is the same as absent) and gets the API's default. The root
// drain_on_version_upgrade is deprecated; when given, it wins over the one
// inside the kind, as in Rivet.

var rootFields = []string{"normal", "serverless", "metadata", "drain_on_version_upgrade"}

type normalRequest struct {
	DrainOnVersionUpgrade *bool    `json:"drain_on_version_upgrade"`
	ActorEvictionDelay    *uint32  `json:"actor_eviction_delay"`
	ActorEvictionPeriod   *uint32  `json:"actor_eviction_period"`
	ActorEvictionRate     *float32 `json:"actor_eviction_rate"`
}

type serverlessRequest struct {
	URL                   *string           `json:"url"`
	Headers               map[string]string `json:"headers"`
	RequestLifespan       *uint32           `json:"request_lifespan"`
	MaxConcurrentActors   *uint64           `json:"max_concurrent_actors"`
	DrainGracePeriod      *uint32           `json:"drain_grace_period"`
	SlotsPerRunner        *uint32           `json:"slots_per_runner"`
	MinRunners            *uint32           `json:"min_runners"`
	MaxRunners            *uint32           `json:"max_runners"`
	RunnersMargin         *uint32           `json:"runners_margin"`
	MetadataPollInterval  *uint64           `json:"metadata_poll_interval"`
	DrainOnVersionUpgrade *bool             `json:"drain_on_version_upgrade"`
	ActorEvictionDelay    *uint32           `json:"actor_eviction_delay"`
	ActorEvictionPeriod   *uint32           `json:"actor_eviction_period"`
	ActorEvictionRate     *float32          `json:"actor_eviction_rate"`
}

// ParseRequest decodes a runner config as the API takes it, fills the
// API's defaults and checks it (Validate), returning the config to store.
//
// field is where the config sits in the request body, prefixed to every
// field an error names: "" when the config is the whole body (api-peer),
// "datacenters.eu" inside api-public's body. A body that is not the shape
// above (not an object, an unknown field, a value of the wrong type, a
// missing url or request_lifespan, both or neither of normal and serverless)
// is api.bad_request naming the field; a config of the right shape that
// breaks a rule is runner_config.invalid (see Validate). Unknown fields are
// rejected at every level, matched exactly (not case-insensitively).
func ParseRequest(raw []byte, field string, actorStopThresholdMs int64) (keys.RunnerConfig, error) {
	cfg, err := decodeRequest(raw, field)
	if err != nil {
		return keys.RunnerConfig{}, err
	}
	if err := Validate(cfg, field, actorStopThresholdMs); err != nil {
		return keys.RunnerConfig{}, err
	}
	return cfg, nil
}

// decodeRequest is ParseRequest without Validate.
func decodeRequest(raw []byte, field string) (keys.RunnerConfig, error) {
	top, err := objectFields(raw, field, rootFields)
	if err != nil {
		return keys.RunnerConfig{}, err
	}
	var rootDrain *bool
	if v, ok := top["drain_on_version_upgrade"]; ok {
		if err := decodeField(v, join(field, "drain_on_version_upgrade"), &rootDrain); err != nil {
			return keys.RunnerConfig{}, err
		}
	}
	var cfg keys.RunnerConfig
	if v, ok := top["metadata"]; ok && !isNull(v) {
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil { // v came out of a valid document
			return keys.RunnerConfig{}, rerr.BadRequest(join(field, "metadata"), "not valid JSON")
		}
		if !utf8.Valid(buf.Bytes()) { // encoding/json lets invalid UTF-8 through in raw values
			return keys.RunnerConfig{}, rerr.BadRequest(join(field, "metadata"), "not valid UTF-8")
		}
		m := buf.String()
		cfg.Metadata = &m
	}
	normal, hasNormal := top["normal"]
	serverless, hasServerless := top["serverless"]
	switch {
	case hasNormal && hasServerless:
		return keys.RunnerConfig{}, rerr.BadRequest(field, "give exactly one of normal and serverless, not both")
	case hasNormal:
		cfg.Normal, err = parseNormal(normal, join(field, "normal"), rootDrain)
	case hasServerless:
		cfg.Serverless, err = parseServerless(serverless, join(field, "serverless"), rootDrain)
	default:
		return keys.RunnerConfig{}, rerr.BadRequest(field, "give exactly one of normal and serverless")
	}
	if err != nil {
		return keys.RunnerConfig{}, err
	}
	return cfg, nil
}

func parseNormal(raw json.RawMessage, field string, rootDrain *bool) (*keys.NormalRunnerConfig, error) {
	var r normalRequest
	if err := decodeObject(raw, field, &r); err != nil {
		return nil, err
	}
	return &keys.NormalRunnerConfig{RunnerConfigCommon: common(rootDrain, r.DrainOnVersionUpgrade,
		r.ActorEvictionDelay, r.ActorEvictionPeriod, r.ActorEvictionRate)}, nil
}

func parseServerless(raw json.RawMessage, field string, rootDrain *bool) (*keys.ServerlessRunnerConfig, error) {
	var r serverlessRequest
	if err := decodeObject(raw, field, &r); err != nil {
		return nil, err
	}
	switch {
	case r.URL == nil:
		return nil, rerr.BadRequest(join(field, "url"), "required")
	case r.RequestLifespan == nil:
		return nil, rerr.BadRequest(join(field, "request_lifespan"), "required")
	}
	s := &keys.ServerlessRunnerConfig{
		URL:                  *r.URL,
		Headers:              r.Headers,
		RequestLifespan:      *r.RequestLifespan,
		DrainGracePeriod:     or(r.DrainGracePeriod, DefaultDrainGracePeriod),
		SlotsPerRunner:       or(r.SlotsPerRunner, DefaultSlotsPerRunner),
		MinRunners:           or(r.MinRunners, DefaultMinRunners),
		MaxRunners:           or(r.MaxRunners, DefaultMaxRunners),
		RunnersMargin:        or(r.RunnersMargin, DefaultRunnersMargin),
		MetadataPollInterval: r.MetadataPollInterval,
		RunnerConfigCommon: common(rootDrain, r.DrainOnVersionUpgrade,
			r.ActorEvictionDelay, r.ActorEvictionPeriod, r.ActorEvictionRate),
	}
	if s.Headers == nil {
		s.Headers = map[string]string{}
	}
	// Rivet: max_concurrent_actors defaults to max_runners as given, else 1000.
	s.MaxConcurrentActors = or(r.MaxConcurrentActors, uint64(or(r.MaxRunners, DefaultMaxRunners)))
	return s, nil
}

func common(rootDrain, drain *bool, delay, period *uint32, rate *float32) keys.RunnerConfigCommon {
	if rootDrain != nil {
		drain = rootDrain
	}
	return keys.RunnerConfigCommon{
		DrainOnVersionUpgrade: or(drain, DefaultDrainOnVersionUpgrade),
		ActorEvictionDelay:    or(delay, DefaultActorEvictionDelay),
		ActorEvictionPeriod:   or(period, DefaultActorEvictionPeriod),
		ActorEvictionRate:     or(rate, DefaultActorEvictionRate),
	}
}

func or[T any](p *T, def T) T {
	if p != nil {
		return *p
	}
	return def
}

// join names a field inside field.
func join(field, name string) string {
	switch {
	case field == "":
		return name
	case name == "":
		return field
	}
	return field + "." + name
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// objectFields decodes raw as a JSON object whose keys are all in known
// (compared exactly) and returns its members.
func objectFields(raw []byte, field string, known []string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		got := "invalid JSON"
		if json.Valid(raw) {
			got = "JSON " + jsonKind(raw)
		}
		return nil, rerr.BadRequest(field, "want an object, got "+got)
	}
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return nil, rerr.BadRequest(join(field, unknown[0]), "unknown field; known fields are "+strings.Join(known, ", "))
	}
	return m, nil
}

// decodeObject decodes the JSON object raw into the struct *dst strictly:
// only dst's fields, by their exact JSON names.
func decodeObject(raw json.RawMessage, field string, dst any) error {
	if _, err := objectFields(raw, field, jsonNames(reflect.TypeOf(dst).Elem())); err != nil {
		return err
	}
	return decodeField(raw, field, dst)
}

// decodeField decodes raw into *dst, turning a type mismatch into
// api.bad_request naming the field.
func decodeField(raw json.RawMessage, field string, dst any) error {
	err := json.Unmarshal(raw, dst)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return rerr.BadRequest(join(field, te.Field), fmt.Sprintf("want %s, got JSON %s", typeName(te.Type), te.Value)).WithCause(err)
	}
	return rerr.BadRequest(field, strings.TrimPrefix(err.Error(), "json: ")).WithCause(err)
}

func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

func jsonKind(raw []byte) string {
	switch b := bytes.TrimSpace(raw); {
	case len(b) == 0:
		return "nothing"
	case b[0] == '[':
		return "array"
	case b[0] == '"':
		return "string"
	case b[0] == 'n':
		return "null"
	case b[0] == 't' || b[0] == 'f':
		return "bool"
	}
	return "number"
}

func typeName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer from 0 to %d", uint64(math.MaxUint64)>>(64-t.Bits()))
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map:
		return "an object of strings"
	}
	return t.String()
}
