package runnerconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Limits of a serverless config, as in the Rivet engine.
const (
	MaxHeaders        = 16
	MaxHeaderNameLen  = 128
	MaxHeaderValueLen = 4096
)

// DefaultActorStopThresholdMs is the engine's pegboard actor_stop_threshold
// (30 minutes), which bounds a serverless drain_grace_period.
const DefaultActorStopThresholdMs = 1_800_000

// Validate checks a config as it will be stored and returns the first
// violation as runner_config.invalid. The serverless checks are the Rivet
// engine's, in its order and with its reasons word for word, without a
// field (docs/serverless.md, § 2.3):
//
//   - url: an absolute http or https URL with a host and a valid port, no
//     user info (literal addresses are checked by CheckDestination);
//   - at most MaxHeaders headers, names of at most MaxHeaderNameLen bytes
//     that are HTTP tokens, values of at most MaxHeaderValueLen bytes without
//     control characters other than tab;
//   - slots_per_runner not 0;
//   - drain_grace_period below request_lifespan, and drain_grace_period·1000
//     at most actorStopThresholdMs (0 means DefaultActorStopThresholdMs).
//
// berth's own checks name the field in the reason and in metadata "field"
// (prefixed by field, as in ParseRequest):
//
//   - exactly one of normal and serverless;
//   - actor_eviction_rate a finite number ≥ 0 (Rivet takes any f32);
//   - metadata, if set, valid JSON in UTF-8;
//   - the whole config at most udb.MaxValueSize bytes stored (it is one value of
//     the store; Rivet takes more), named as metadata's fault when it has metadata.
func Validate(c keys.RunnerConfig, field string, actorStopThresholdMs int64) error {
	if err := validateFields(c, field, actorStopThresholdMs); err != nil {
		return err
	}
	if n := len(keys.RunnerConfigDataKey{}.Encode(c)); n > udb.MaxValueSize {
		f := field
		if c.Metadata != nil {
			f = join(field, "metadata")
		}
		return invalid(f, "the config takes %d bytes stored, more than the %d a runner config may", n, udb.MaxValueSize)
	}
	return nil
}

// validateFields is Validate but for the stored size, which only a config that passes it can
// be encoded to measure.
func validateFields(c keys.RunnerConfig, field string, actorStopThresholdMs int64) error {
	if actorStopThresholdMs <= 0 {
		actorStopThresholdMs = DefaultActorStopThresholdMs
	}
	if c.Metadata != nil && (!json.Valid([]byte(*c.Metadata)) || !utf8.ValidString(*c.Metadata)) {
		return invalid(join(field, "metadata"), "not valid JSON in UTF-8")
	}
	switch {
	case c.Normal != nil && c.Serverless != nil:
		return invalid(field, "both normal and serverless are set")
	case c.Normal != nil:
		return validateCommon(c.Normal.RunnerConfigCommon, join(field, "normal"))
	case c.Serverless == nil:
		return invalid(field, "neither normal nor serverless is set")
	}
	s, field := c.Serverless, join(field, "serverless")
	// The reference's checks, in its order and with its words (docs/serverless.md, § 2.3):
	// no field in the metadata and none in the reason.
	if _, err := (outbound.Policy{AllowPrivate: true}).CheckURL(s.URL); err != nil {
		return rivetInvalid("invalid serverless url: %v", err)
	}
	if err := validateHeaders(s.Headers); err != nil {
		return err
	}
	if s.SlotsPerRunner == 0 {
		return rivetInvalid("`slots_per_runner` cannot be 0")
	}
	if s.DrainGracePeriod >= s.RequestLifespan {
		return rivetInvalid("`drain_grace_period` must be less than `request_lifespan` (%ds >= %ds)",
			s.DrainGracePeriod, s.RequestLifespan)
	}
	if ms := int64(s.DrainGracePeriod) * 1000; ms > actorStopThresholdMs {
		return rivetInvalid("`drain_grace_period` cannot be greater than `actor_stop_threshold` (%dms > %dms). "+
			"If `drain_grace_period` was omitted, the default is %ds.", ms, actorStopThresholdMs, DefaultDrainGracePeriod)
	}
	return validateCommon(s.RunnerConfigCommon, field)
}

// CheckDestination refuses a serverless config whose url names, as a
// literal address, a destination p refuses: runner_config.invalid worded as
// the reference's ("invalid serverless url: address 10.0.0.1 is not an
// allowed destination (private)"). Host names are checked when called
// (pkg/outbound). A normal config passes.
func CheckDestination(c keys.RunnerConfig, p outbound.Policy) error {
	if c.Serverless == nil {
		return nil
	}
	if _, err := p.CheckURL(c.Serverless.URL); err != nil {
		return rivetInvalid("invalid serverless url: %v", err)
	}
	return nil
}

func validateCommon(c keys.RunnerConfigCommon, field string) error {
	if r := float64(c.ActorEvictionRate); math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return invalid(join(field, "actor_eviction_rate"), "must be a finite number ≥ 0, got %v", r)
	}
	return nil
}

func validateHeaders(h map[string]string) error {
	if len(h) > MaxHeaders {
		return rivetInvalid("too many headers (max %d)", MaxHeaders)
	}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		v := h[name]
		switch {
		case len(name) > MaxHeaderNameLen:
			return rivetInvalid("invalid header name: too long (max %d)", MaxHeaderNameLen)
		case !isToken(name):
			return rivetInvalid("invalid header name: invalid HTTP header name")
		case len(v) > MaxHeaderValueLen:
			return rivetInvalid("invalid header value: too long (max %d)", MaxHeaderValueLen)
		case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			return rivetInvalid("invalid header value: failed to parse header value")
		}
	}
	return nil
}

// isToken reports whether s is an HTTP token (RFC 9110 §5.6.2): a header
// name. (Rivet's reqwest accepts upper case and lowers it; so does berth,
// storing the name as given.)
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}

// invalid is runner_config.invalid naming field (berth's own checks).
func invalid(field, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if field != "" {
		reason = field + ": " + reason
	}
	return rerr.RunnerConfigInvalid(reason).WithMeta("field", field)
}

// rivetInvalid is runner_config.invalid as the reference words it: the
// reason alone, no field.
func rivetInvalid(format string, args ...any) error {
	return rerr.RunnerConfigInvalid(fmt.Sprintf(format, args...))
}
