// Package serverless talks to the endpoints of serverless runner pools: it
// fetches an endpoint's /metadata (on a config write, on refresh-metadata,
// for the health check and periodically), classifies failures as the Rivet
// engine does and stores what it learns (the pool's envoy protocol
// version). Every call goes through pkg/outbound's checked client.
// docs/serverless.md, §§ 2.7, 2.8 and 3, is the behaviour followed.
package serverless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/berthhq/berth/pkg/outbound"
)

// Limits of a /metadata call.
const (
	// MetadataTimeout bounds one /metadata call, as on the reference.
	MetadataTimeout = 10 * time.Second
	// MaxMetadataBody bounds the body read from /metadata.
	MaxMetadataBody = 1 << 20
	// MaxEnvoyProtocolVersion is the newest envoy protocol berth speaks.
	MaxEnvoyProtocolVersion = 8
	// bodyShown is how much of a failing body an error shows, in characters.
	bodyShown = 1024
)

// Metadata is what an endpoint's /metadata says that berth uses.
type Metadata struct {
	Runtime string
	Version string
	// EnvoyProtocolVersion is set for an envoy pool (rivetkit ≥ 2.3), nil for
	// a runner pool.
	EnvoyProtocolVersion *uint16
	// EnvoyVersion and RunnerVersion are envoy.version and runner.version, the
	// version of the hosts the endpoint starts now (nil when absent or not a
	// u32): older hosts of the pool are drained.
	EnvoyVersion, RunnerVersion *uint32
	// ActorNames are actorNames' names whose metadata is a JSON object, with it.
	ActorNames map[string]json.RawMessage
}

// FetchError is a failed /metadata call, shaped as the reference's error
// envelope: {message, details?, metadata: {kind, …}}.
type FetchError struct {
	Message string
	Details string
	Meta    map[string]any
	cause   error
}

func (e *FetchError) Error() string {
	if e.cause != nil {
		return e.Message + ": " + e.cause.Error()
	}
	return e.Message
}

func (e *FetchError) Unwrap() error { return e.cause }

// Kind is the metadata's kind (non_success_status, request_failed, …).
func (e *FetchError) Kind() string { s, _ := e.Meta["kind"].(string); return s }

// Envelope is the JSON form of e.
func (e *FetchError) Envelope() map[string]any {
	m := map[string]any{"message": e.Message, "metadata": e.Meta}
	if e.Details != "" {
		m["details"] = e.Details
	}
	return m
}

// Fetcher fetches /metadata through a checked client.
type Fetcher struct {
	Client *http.Client
	Policy outbound.Policy
	// UserAgent is sent with every call.
	UserAgent string
	// Timeout bounds one call; 0 means MetadataTimeout.
	Timeout time.Duration
}

type metadataJSON struct {
	Runtime              *string `json:"runtime"`
	Version              *string `json:"version"`
	EnvoyProtocolVersion *int64  `json:"envoyProtocolVersion"`
	// Decoded apart (hostsOf): a bad shape there loses that part only.
	Envoy      json.RawMessage `json:"envoy"`
	Runner     json.RawMessage `json:"runner"`
	ActorNames json.RawMessage `json:"actorNames"`
}

// Fetch calls GET {url without trailing /}/metadata with headers and checks
// the answer.
func (f Fetcher) Fetch(ctx context.Context, rawURL string, headers map[string]string) (Metadata, *FetchError) {
	rawURL = strings.TrimSpace(rawURL)
	if _, err := f.Policy.CheckURL(rawURL); err != nil {
		if b := outbound.Blocked(err); b != nil {
			return Metadata{}, blockedError(b)
		}
		return Metadata{}, fail("invalid serverless metadata request", "invalid_request", err)
	}
	timeout := f.Timeout
	if timeout <= 0 {
		timeout = MetadataTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(rawURL, "/")+"/metadata", nil)
	if err != nil {
		return Metadata{}, fail("invalid serverless metadata request", "invalid_request", err)
	}
	for k, v := range headers {
		if !validHeader(k, v) {
			return Metadata{}, fail("invalid serverless metadata request", "invalid_request", nil)
		}
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", "*/*")
	req.Header.Set("User-Agent", f.UserAgent)
	res, err := f.Client.Do(req)
	switch {
	case err == nil:
	case outbound.Blocked(err) != nil:
		return Metadata{}, blockedError(outbound.Blocked(err))
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() != nil:
		return Metadata{}, fail("serverless metadata request timed out", "request_timed_out", err)
	default:
		return Metadata{}, fail("failed to reach serverless endpoint", "request_failed", err)
	}
	defer res.Body.Close()
	body, _, err := outbound.ReadLimited(res.Body, MaxMetadataBody)
	if err != nil {
		if ctx.Err() != nil {
			return Metadata{}, fail("serverless metadata request timed out", "request_timed_out", err)
		}
		return Metadata{}, fail("failed to reach serverless endpoint", "request_failed", err)
	}
	if res.StatusCode < 200 || res.StatusCode > 299 {
		e := fail(fmt.Sprintf("serverless metadata request returned status %d", res.StatusCode), "non_success_status", nil)
		e.Meta["status_code"] = res.StatusCode
		e.Meta["body"] = shown(body)
		return Metadata{}, e
	}
	var m metadataJSON
	if err := json.Unmarshal(body, &m); err != nil {
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			e := fail("serverless metadata response is not valid JSON", "invalid_response_json", err)
			e.Meta["body"] = shown(body)
			e.Meta["parse_error"] = err.Error()
			return Metadata{}, e
		}
		m = metadataJSON{} // valid JSON of another shape: refused below
	}
	runtime, version := deref(m.Runtime), deref(m.Version)
	if runtime != "rivetkit" || strings.TrimSpace(version) == "" {
		e := fail(fmt.Sprintf("serverless runtime %s version %s is unsupported", runtime, version), "invalid_response_schema", nil)
		e.Meta["runtime"] = runtime
		e.Meta["version"] = version
		return Metadata{}, e
	}
	out := Metadata{Runtime: runtime, Version: version, EnvoyVersion: hostVersion(m.Envoy), RunnerVersion: hostVersion(m.Runner),
		ActorNames: actorNames(m.ActorNames)}
	if v := m.EnvoyProtocolVersion; v != nil {
		if *v < 1 || *v > MaxEnvoyProtocolVersion {
			e := fail(fmt.Sprintf("envoy protocol version %d is not supported (max supported: %d)", *v, MaxEnvoyProtocolVersion),
				"invalid_envoy_protocol_version", nil)
			e.Meta["envoy_protocol_version"] = *v
			e.Meta["max_supported_envoy_protocol_version"] = MaxEnvoyProtocolVersion
			return Metadata{}, e
		}
		pv := uint16(*v)
		out.EnvoyProtocolVersion = &pv
	}
	return out, nil
}

func fail(message, kind string, cause error) *FetchError {
	return &FetchError{Message: message, Meta: map[string]any{"kind": kind}, cause: cause}
}

func blockedError(b *outbound.BlockedError) *FetchError {
	return &FetchError{
		Message: "serverless endpoint is not an allowed destination", Details: b.Reason,
		Meta: map[string]any{"kind": "destination_blocked", "reason": b.Reason}, cause: b,
	}
}

// shown is body as an error shows it: its first bodyShown characters, then
// "...[truncated]" when there were more; invalid UTF-8 replaced.
func shown(body []byte) string {
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	if utf8.RuneCountInString(s) <= bodyShown {
		return s
	}
	n := 0
	for i := range s {
		if n == bodyShown {
			return s[:i] + "...[truncated]"
		}
		n++
	}
	return s
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// validHeader reports whether name is an HTTP token and value has no control
// characters other than tab.
func validHeader(name, value string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return !strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f })
}

// HealthCheck is the answer of POST /runner-configs/serverless-health-check:
// {"success": {"version"}} or {"failure": {"error": envelope}}.
func (f Fetcher) HealthCheck(ctx context.Context, rawURL string, headers map[string]string) map[string]any {
	m, err := f.Fetch(ctx, rawURL, headers)
	if err != nil {
		return map[string]any{"failure": map[string]any{"error": err.Envelope()}}
	}
	return map[string]any{"success": map[string]any{"version": m.Version}}
}
