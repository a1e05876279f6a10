package rerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestConstructors checks that each constructor builds its catalog code, with every
// placeholder of the message filled.
func TestConstructors(t *testing.T) {
	tests := []struct {
		err  *Error
		key  string
		msg  string
		meta map[string]any
	}{
		{BadRequest("limit", "not a number"), "api.bad_request", "Request is invalid: limit: not a number",
			map[string]any{"reason": "limit: not a number", "field": "limit"}},
		{BadRequest("", "malformed JSON"), "api.bad_request", "Request is invalid: malformed JSON",
			map[string]any{"reason": "malformed JSON"}},
		{APIUnauthorized(), "api.unauthorized", "Authentication required", nil},
		{APIForbidden(), "api.forbidden", "Access denied", nil},
		{APINotFound(), "api.not_found", "The requested resource was not found", nil},
		{APIMethodNotAllowed(), "api.method_not_allowed", "Method not allowed", nil},
		{Internal(io.EOF), "core.internal_error", "An internal error occurred", nil},
		{Corrupt("RunnerLastPingKey", "value is %d bytes, want 8", 3), "store.corrupt",
			"Stored RunnerLastPingKey is corrupt: value is 3 bytes, want 8",
			map[string]any{"what": "RunnerLastPingKey", "reason": "value is 3 bytes, want 8"}},
		{ActorNotFound("a1"), "actor.not_found", "Actor 'a1' does not exist or was destroyed.", map[string]any{"actor_id": "a1"}},
		{ActorNamespaceNotFound("ns"), "actor.namespace_not_found", "Namespace 'ns' does not exist.", map[string]any{"namespace": "ns"}},
		{ActorInputTooLarge(4 << 20), "actor.input_too_large", "Input too large (max 4194304 bytes).", map[string]any{"max_size": 4 << 20}},
		{ActorEmptyKey(), "actor.empty_key", "Key label cannot be empty.", nil},
		{ActorKeyTooLarge(1024, "k"), "actor.key_too_large", "Key label too large (max 1024 bytes): k",
			map[string]any{"max_size": 1024, "key_preview": "k"}},
		{ActorDuplicateKey("k", "a1"), "actor.duplicate_key", "Actor key 'k' already in use for actor 'a1'",
			map[string]any{"key": "k", "existing_actor_id": "a1"}},
		{ActorKeyReservedInDifferentDatacenter(2), "actor.key_reserved_in_different_datacenter",
			"Actor key is already reserved in the datacenter '2'. Either remove the datacenter constraint to automatically create this actor in the correct datacenter or provide the datacenter that matches.",
			map[string]any{"datacenter_label": uint16(2)}},
		{ActorNoRunnerConfigConfigured("default", "pool"), "actor.no_runner_config_configured",
			"No runner config with name 'pool' are available in any datacenter for the namespace 'default'. Validate a provider is listed that matches the requested pool name.",
			map[string]any{"namespace": "default", "pool_name": "pool"}},
		{ActorKVKeyNotFound(), "actor.kv_key_not_found", "The KV key does not exist for this actor.", nil},
		{ActorKVStorageQuotaExceeded(10, 20), "actor.kv_storage_quota_exceeded",
			"Not enough space left in storage (10 bytes remaining, current payload is 20 bytes).",
			map[string]any{"remaining": int64(10), "payload_size": int64(20)}},
		{NamespaceFailedToCreate("name too short"), "namespace.failed_to_create", "Failed to create namespace: name too short",
			map[string]any{"reason": "name too short"}},
		{NamespaceNameNotUnique("prod"), "namespace.name_not_unique", "Namespace name 'prod' is already in use.", map[string]any{"name": "prod"}},
		{NamespaceNotFound("prod"), "namespace.not_found", "Namespace 'prod' does not exist.", map[string]any{"namespace": "prod"}},
		{NamespaceNotLeader(), "namespace.not_leader", "Attempting to run operation in non-leader datacenter.", nil},
		{NamespaceInvalidUpdate("x"), "namespace.invalid_update", "Failed to update namespace: x", map[string]any{"reason": "x"}},
		{RunnerNotFound("r1"), "runner.not_found", "Runner 'r1' does not exist.", map[string]any{"runner_id": "r1"}},
		{RunnerStaleConnection("r1"), "runner.stale_connection", "A newer connection of runner 'r1' superseded this one.", map[string]any{"runner_id": "r1"}},
		{EnvoyNotFound("e1"), "envoy.not_found", "Envoy 'e1' does not exist.", map[string]any{"envoy_key": "e1"}},
		{EnvoyStaleConnection("e1"), "envoy.stale_connection", "A newer connection of envoy 'e1' superseded this one.", map[string]any{"envoy_key": "e1"}},
		{EnvoyExpired("e1"), "envoy.expired", "Envoy 'e1' has expired.", map[string]any{"envoy_key": "e1"}},
		{RunnerConfigInvalid("bad url"), "runner_config.invalid", "Invalid runner config: bad url", map[string]any{"reason": "bad url"}},
		{FailedToFetchMetadata(map[string]any{"message": "m"}), "serverless_runner_pool.failed_to_fetch_metadata",
			"Failed to fetch serverless metadata: {reason}.", map[string]any{"reason": map[string]any{"message": "m"}}},
		{ActorNotFound(""), "actor.not_found", "The actor does not exist or was destroyed.", nil},
		{SQLiteFenced("a1", "any", "gone"), "sqlite.fenced", "The SQLite database of actor a1 refused generation any: gone.",
			map[string]any{"actor_id": "a1", "generation": "any", "reason": "gone"}},
		{PegboardRouteWakeSignalTimeout(5001, 5000), "pegboard.route_wake_signal_timeout", "Timed out sending actor wake signal.",
			map[string]any{"elapsed_ms": int64(5001), "timeout_ms": int64(5000)}},
		{GuardRetryAttemptsExceeded(7, "runner.actor_not_found", 503, "actor"), "guard.retry_attempts_exceeded",
			"All 7 retry attempts failed for actor. Last status: 503. Last error: runner.actor_not_found.",
			map[string]any{"attempts": 7, "last_error_code": "runner.actor_not_found", "last_status": 503, "last_target_kind": "actor"}},
		{WSNoRunnerConfig("p"), "ws.no_runner_config", "Must create a runner config before connecting an envoy with pool name p.", map[string]any{"pool_name": "p"}},
		{RunnerConfigNotFound("pool"), "runner_config.not_found", "No config exists for runner 'pool'.", map[string]any{"runner_name": "pool"}},
		{DatacenterNotFound("eu"), "datacenter.not_found", "Datacenter 'eu' does not exist.", map[string]any{"datacenter": "eu"}},
		{DatacenterUnreachable("eu", io.ErrUnexpectedEOF), "datacenter.unreachable", "Datacenter 'eu' did not answer.", map[string]any{"datacenter": "eu"}},
		{ValidationInvalidInput("name is required"), "validation.invalid_input", "name is required", map[string]any{"message": "name is required"}},
		{ValidationTooManyActorIDs(32, 40), "validation.too_many_actor_ids", "Too many actor IDs provided. Maximum is 32, got 40", map[string]any{"max": 32, "count": 40}},
		{ValidationNoKeys(), "validation.no_keys", "No keys provided. At least one key is required.", nil},
		{ValidationRaceCondition(), "validation.race_condition", "Race condition detected between get_or_create and delete operations", nil},
		{GuardServiceUnavailable(), "guard.service_unavailable", "Service unavailable.", nil},
		{GuardRateLimit(), "guard.rate_limit", "Too many requests. Try again later.", nil},
		{WSEviction(), "ws.eviction", "The websocket has been evicted and should not attempt to reconnect.", nil},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			e := tt.err
			if e.Key() != tt.key || e.Message != tt.msg {
				t.Fatalf("got %s %q, want %s %q", e.Key(), e.Message, tt.key, tt.msg)
			}
			if fmt.Sprint(e.Metadata) != fmt.Sprint(tt.meta) {
				t.Fatalf("metadata %v, want %v", e.Metadata, tt.meta)
			}
			ent, ok := Lookup(e.Group, e.Code)
			if !ok || e.Status != ent.Status {
				t.Fatalf("status %d, catalog %d (found %v)", e.Status, ent.Status, ok)
			}
			for _, k := range ent.Meta {
				if _, set := e.Metadata[k]; !set && !slices.Contains(ent.Optional, k) {
					t.Errorf("metadata key %q of the catalog entry is not set", k)
				}
			}
		})
	}
}

func TestKeyTooLargePreview(t *testing.T) {
	key := strings.Repeat("é", 100) // after the "x", each é starts at an odd offset: byte 64 is inside one
	e := ActorKeyTooLarge(128, "x"+key)
	p := e.Metadata["key_preview"].(string)
	if len(p) > keyPreviewLen+len("…") || !strings.HasSuffix(p, "…") || !strings.HasPrefix(p, "xéé") {
		t.Fatalf("preview %q", p)
	}
	if strings.ContainsRune(p, '\uFFFD') {
		t.Fatalf("preview %q cut inside a character", p)
	}
}

func TestFromWire(t *testing.T) {
	e := FromWire("actor", "duplicate_key")
	if e.Key() != "actor.duplicate_key" || e.Message != "Actor key already in use." || e.Status != 409 || e.Metadata != nil {
		t.Fatalf("got %+v", e)
	}
	// Unknown code: core.internal_error naming it; never a panic.
	u := FromWire("nope", "missing")
	if u.Key() != "core.internal_error" || u.Status != 500 || u.Metadata["unknown_code"] != "nope.missing" || len(u.Metadata) != 1 {
		t.Fatalf("unknown code gave %+v", u)
	}
}

// TestOptionalMeta: an omitempty key given its zero value is left out, and the metadata of an
// error without any is a nil map (omitted from JSON).
func TestOptionalMeta(t *testing.T) {
	if e := coreInternalError(""); e.Metadata != nil {
		t.Fatalf("metadata %v, want nil", e.Metadata)
	}
	if e := apiBadRequest("r", ""); len(e.Metadata) != 1 || e.Metadata["reason"] != "r" {
		t.Fatalf("metadata %v", e.Metadata)
	}
	if APIForbidden().Metadata != nil {
		t.Fatal("no metadata must be a nil map (omitted from JSON)")
	}
	// A required key is set even when zero.
	if e := NamespaceNotFound(""); len(e.Metadata) != 1 || e.Message != "Namespace '' does not exist." {
		t.Fatalf("got %+v", e)
	}
}

func TestWithMetaIsCopyOnWrite(t *testing.T) {
	base := FromWire("actor", "duplicate_key").WithMeta("key", "k")
	withID := base.WithMeta("existing_actor_id", "a1")
	if withID.Message != "Actor key 'k' already in use for actor 'a1'" {
		t.Fatalf("WithMeta did not re-render: %q", withID.Message)
	}
	if _, set := base.Metadata["existing_actor_id"]; set || base.Message != "Actor key already in use." {
		t.Fatal("WithMeta changed the original")
	}
	again := withID.WithMeta("key", "other")
	if withID.Metadata["key"] != "k" || again.Metadata["key"] != "other" {
		t.Fatal("WithMeta shares the metadata map between copies")
	}
	// Catalog entries themselves are never touched.
	if catalog[CodeActorDuplicateKey-1].Message != "Actor key already in use." {
		t.Fatal("catalog entry changed")
	}
	c := base.WithCause(io.EOF)
	if base.Cause() != nil || c.Cause() != io.EOF {
		t.Fatal("WithCause changed the original")
	}
}

func TestMatching(t *testing.T) {
	inner := NamespaceNotFound("prod").WithCause(io.ErrUnexpectedEOF)
	err := fmt.Errorf("create actor: %w", fmt.Errorf("resolve: %w", inner))

	if !errors.Is(err, NamespaceNotFound("")) {
		t.Error("errors.Is by group and code failed through %w")
	}
	if errors.Is(err, ActorNotFound("")) || errors.Is(err, NamespaceNotLeader()) {
		t.Error("errors.Is matched a different code")
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Error("errors.Is does not reach the cause")
	}
	if e, ok := As(err); !ok || e != inner {
		t.Errorf("As = %v, %v", e, ok)
	}
	var target *Error
	if !errors.As(err, &target) || target.Code != "not_found" {
		t.Error("errors.As failed")
	}
	if !Is(err, CodeNamespaceNotFound) || Is(err, CodeActorNotFound) || Is(err, 0) || Is(nil, CodeNamespaceNotFound) {
		t.Error("Is wrong")
	}
	if CodeOf(err) != CodeNamespaceNotFound || CodeOf(io.EOF) != 0 || CodeOf(nil) != 0 || CodeOf(&Error{Group: "future", Code: "thing"}) != 0 {
		t.Error("CodeOf wrong")
	}
	// A peer's error matches by group and code.
	if p, _ := Parse(404, NamespaceNotFound("x").JSON()); !Is(p, CodeNamespaceNotFound) || CodeOf(p) != CodeNamespaceNotFound {
		t.Error("a parsed error does not match its code")
	}
	if _, ok := As(io.EOF); ok {
		t.Error("As found an *Error in io.EOF")
	}
	if _, ok := As(nil); ok {
		t.Error("As(nil) found an *Error")
	}
	// Outermost *Error wins when one wraps another.
	outer := DatacenterUnreachable("eu", inner)
	if e, _ := As(fmt.Errorf("x: %w", outer)); e.Key() != "datacenter.unreachable" || !errors.Is(outer, NamespaceNotFound("x")) {
		t.Error("nested *Error handling wrong")
	}
	if got := err.Error(); got != "create actor: resolve: namespace.not_found: Namespace 'prod' does not exist.: unexpected EOF" {
		t.Errorf("Error() = %q", got)
	}
}

func TestHTTPStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 200},
		{io.EOF, 500},
		{fmt.Errorf("x: %w", NamespaceNotFound("a")), 404},
		{APIUnauthorized(), 401},
		{APIForbidden(), 403},
		{ActorDuplicateKey("k", "a"), 409},
		{BadRequest("f", "r"), 400},
		{GuardServiceUnavailable(), 503},
		{GuardRequestTimeout("pre_request", 5), 504},
		{&Error{Group: "x", Code: "y"}, 500},
	} {
		if got := HTTPStatus(tt.err); got != tt.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if Key(nil) != "" || Key(io.EOF) != "core.internal_error" || Key(ValidationNoKeys()) != "validation.no_keys" {
		t.Error("Key wrong")
	}
}

func TestPublic(t *testing.T) {
	if Public(nil) != nil {
		t.Error("Public(nil) != nil")
	}
	nf := NamespaceNotFound("a")
	if Public(fmt.Errorf("x: %w", nf)) != nf {
		t.Error("a public error must pass unchanged")
	}
	for _, err := range []error{io.EOF, Corrupt("K", "bad"), Internal(io.EOF), APIInternalError()} {
		p := Public(err)
		if p.Key() != "core.internal_error" || p.Metadata != nil || p.Cause() != nil {
			t.Errorf("Public(%v) = %+v", err, p)
		}
	}
	remote := &Error{Group: "future", Code: "thing", Message: "m", Status: 418}
	if Public(remote) != remote {
		t.Error("an error from a newer peer must pass unchanged")
	}
}

func TestJSON(t *testing.T) {
	tests := []struct {
		err  *Error
		want string
	}{
		{APIForbidden(), `{"group":"api","code":"forbidden","message":"Access denied"}`},
		{NamespaceNotFound("prod"), `{"group":"namespace","code":"not_found","message":"Namespace 'prod' does not exist.","metadata":{"namespace":"prod"}}`},
		{ValidationTooManyActorIDs(32, 40), `{"group":"validation","code":"too_many_actor_ids","message":"Too many actor IDs provided. Maximum is 32, got 40","metadata":{"count":40,"max":32}}`},
		// No HTML escaping, no cause.
		{ValidationInvalidInput("a <b> & c").WithCause(io.EOF), `{"group":"validation","code":"invalid_input","message":"a <b> & c","metadata":{"message":"a <b> & c"}}`},
		// A value JSON cannot encode is sent as text instead of failing.
		{BadRequest("", "r").WithMeta("weird", math.Inf(1)), `{"group":"api","code":"bad_request","message":"Request is invalid: r","metadata":{"reason":"r","weird":"+Inf"}}`},
		{BadRequest("", "x").WithMeta("reason", make(chan int)).WithMeta("reason", "ok"), `{"group":"api","code":"bad_request","message":"Request is invalid: ok","metadata":{"reason":"ok"}}`},
		{&Error{Group: "x", Code: "y", Metadata: map[string]any{}}, `{"group":"x","code":"y","message":""}`},
	}
	for _, tt := range tests {
		if got := string(tt.err.JSON()); got != tt.want {
			t.Errorf("JSON = %s\nwant   %s", got, tt.want)
		}
		b, err := json.Marshal(tt.err)
		if err != nil || string(b) != tt.want && !strings.Contains(tt.want, "<") {
			t.Errorf("json.Marshal = %s, %v", b, err)
		}
	}
	// Embedded in a larger response, the shape holds.
	b, _ := json.Marshal(map[string]any{"error": ValidationNoKeys()})
	if string(b) != `{"error":{"group":"validation","code":"no_keys","message":"No keys provided. At least one key is required."}}` {
		t.Errorf("embedded: %s", b)
	}
}

func TestFill(t *testing.T) {
	meta := map[string]any{"a": "x", "n": 3, "e": ""}
	for _, tt := range []struct {
		tpl, want string
		ok        bool
	}{
		{"plain", "plain", true},
		{"{a}-{n}", "x-3", true},
		{"{e}|", "|", true},
		{"{missing}", "", false},
		{"{A} {a", "{A} {a", true},
		{"{{a}}", "{x}", true},
		{"{}", "{}", true},
		{"é{a}é", "éxé", true},
	} {
		got, ok := fill(tt.tpl, meta)
		if got != tt.want || ok != tt.ok {
			t.Errorf("fill(%q) = %q, %v; want %q, %v", tt.tpl, got, ok, tt.want, tt.ok)
		}
	}
}
