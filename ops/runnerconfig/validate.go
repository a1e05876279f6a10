package runnerconfig

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
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

// Validate checks a config as it will be stored, with the Rivet engine's
// rules, and returns the first violation as runner_config.invalid whose
// reason starts with the field it names and whose metadata "field" is that
// field (prefixed by field, as in ParseRequest):
//
//   - exactly one of normal and serverless;
//   - serverless url: an absolute http or https URL with a host (Rivet only
//     asks that it parse; berth calls it over HTTP);
//   - at most MaxHeaders headers, names of at most MaxHeaderNameLen bytes
//     that are HTTP tokens, values of at most MaxHeaderValueLen bytes without
//     control characters other than tab;
//   - slots_per_runner not 0;
//   - drain_grace_period below request_lifespan, and drain_grace_period·1000
//     at most actorStopThresholdMs (0 means DefaultActorStopThresholdMs);
//   - actor_eviction_rate a finite number ≥ 0 (berth: Rivet takes any f32);
//   - metadata, if set, valid JSON in UTF-8;
//   - the whole config at most udb.MaxValueSize bytes stored (berth: it is one value of
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
	if err := validateURL(s.URL); err != nil {
		return invalid(join(field, "url"), "invalid serverless url: %v", err)
	}
	if err := validateHeaders(s.Headers, join(field, "headers")); err != nil {
		return err
	}
	if s.SlotsPerRunner == 0 {
		return invalid(join(field, "slots_per_runner"), "must not be 0")
	}
	if s.DrainGracePeriod >= s.RequestLifespan {
		return invalid(join(field, "drain_grace_period"),
			"must be less than request_lifespan (%ds >= %ds; the default is %ds when omitted)",
			s.DrainGracePeriod, s.RequestLifespan, DefaultDrainGracePeriod)
	}
	if ms := int64(s.DrainGracePeriod) * 1000; ms > actorStopThresholdMs {
		return invalid(join(field, "drain_grace_period"),
			"must not be greater than the engine's actor_stop_threshold (%dms > %dms; the default is %ds when omitted)",
			ms, actorStopThresholdMs, DefaultDrainGracePeriod)
	}
	return validateCommon(s.RunnerConfigCommon, field)
}

func validateCommon(c keys.RunnerConfigCommon, field string) error {
	if r := float64(c.ActorEvictionRate); math.IsNaN(r) || math.IsInf(r, 0) || r < 0 {
		return invalid(join(field, "actor_eviction_rate"), "must be a finite number ≥ 0, got %v", r)
	}
	return nil
}

func validateURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("scheme %q: want http or https", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return fmt.Errorf("no host in %q", s)
	}
	return nil
}

func validateHeaders(h map[string]string, field string) error {
	if len(h) > MaxHeaders {
		return invalid(field, "too many headers: %d, at most %d", len(h), MaxHeaders)
	}
	for _, name := range slices.Sorted(maps.Keys(h)) {
		v := h[name]
		switch {
		case len(name) > MaxHeaderNameLen:
			return invalid(field, "invalid header name %.32q…: longer than %d bytes", name, MaxHeaderNameLen)
		case !isToken(name):
			return invalid(field, "invalid header name %q: not an HTTP token", name)
		case len(v) > MaxHeaderValueLen:
			return invalid(field, "invalid value of header %q: longer than %d bytes", name, MaxHeaderValueLen)
		case strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }):
			return invalid(field, "invalid value of header %q: control characters", name)
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

// invalid is runner_config.invalid naming field.
func invalid(field, format string, args ...any) error {
	reason := fmt.Sprintf(format, args...)
	if field != "" {
		reason = field + ": " + reason
	}
	return rerr.RunnerConfigInvalid(reason, field)
}
