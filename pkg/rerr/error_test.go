package rerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
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
		{Unauthorized(), "api.unauthorized", "Authentication required", nil},
		{Forbidden(), "api.forbidden", "Access denied", nil},
		{NotFound(), "api.not_found", "The requested resource was not found", nil},
		{MethodNotAllowed(), "api.method_not_allowed", "Method not allowed", nil},
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
		{NoRunnerConfigConfigured("default", "pool"), "actor.no_runner_config_configured",
			"No runner config with name 'pool' are available in any datacenter for the namespace 'default'. Validate a provider is listed that matches the requested pool name.",
			map[string]any{"namespace": "default", "pool_name": "pool"}},
		{KVKeyNotFound(), "actor.kv_key_not_found", "The KV key does not exist for this actor.", nil},
		{KVStorageQuotaExceeded(10, 20), "actor.kv_storage_quota_exceeded",
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
		{RunnerConfigNotFound("pool"), "runner_config.not_found", "No config exists for runner 'pool'.", map[string]any{"runner_name": "pool"}},
		{DatacenterNotFound("eu"), "datacenter.not_found", "Datacenter 'eu' does not exist.", map[string]any{"datacenter": "eu"}},
		{DatacenterUnreachable("eu", io.ErrUnexpectedEOF), "datacenter.unreachable", "Datacenter 'eu' did not answer.", map[string]any{"datacenter": "eu"}},
		{InvalidInput("name is required"), "validation.invalid_input", "name is required", map[string]any{"message": "name is required"}},
		{TooManyActorIDs(32, 40), "validation.too_many_actor_ids", "Too many actor IDs provided. Maximum is 32, got 40", map[string]any{"max": 32, "count": 40}},
		{NoKeys(), "validation.no_keys", "No keys provided. At least one key is required.", nil},
		{RaceCondition(), "validation.race_condition", "Race condition detected between get_or_create and delete operations", nil},
		{ServiceUnavailable(), "guard.service_unavailable", "Service unavailable.", nil},
		{RateLimited(), "guard.rate_limit", "Too many requests. Try again later.", nil},
		{WS("eviction"), "ws.eviction", "The websocket has been evicted and should not attempt to reconnect.", nil},
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
				if _, set := e.Metadata[k]; !set && k != "field" && k != "unknown_code" {
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

func TestNew(t *testing.T) {
	e := New("actor", "duplicate_key", "key", "k", "existing_actor_id", "a1")
	if e.Message != "Actor key 'k' already in use for actor 'a1'" || e.Status != 409 {
		t.Fatalf("got %q %d", e.Message, e.Status)
	}
	// Missing a placeholder value: the plain message, not a half-filled template.
	if e := New("actor", "duplicate_key", "key", "k"); e.Message != "Actor key already in use." {
		t.Fatalf("partial metadata gave %q", e.Message)
	}
	// Unknown code: core.internal_error naming it; never a panic.
	u := New("nope", "missing", "x", 1)
	if u.Key() != "core.internal_error" || u.Status != 500 || u.Metadata["unknown_code"] != "nope.missing" || len(u.Metadata) != 1 {
		t.Fatalf("unknown code gave %+v", u)
	}
	// slog-style odd and non-string keys.
	o := New("api", "bad_request", 7, "x", "reason")
	if o.Metadata["7"] != "x" || o.Metadata["!BADKEY"] != "reason" {
		t.Fatalf("metadata %v", o.Metadata)
	}
	if New("api", "forbidden").Metadata != nil {
		t.Fatal("no metadata must be a nil map (omitted from JSON)")
	}
}

func TestWithMetaIsCopyOnWrite(t *testing.T) {
	base := New("actor", "duplicate_key", "key", "k")
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
	if index["actor.duplicate_key"].Message != "Actor key already in use." {
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

	if !errors.Is(err, New("namespace", "not_found")) {
		t.Error("errors.Is by group and code failed through %w")
	}
	if errors.Is(err, New("actor", "not_found")) || errors.Is(err, New("namespace", "not_leader")) {
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
	if !Is(err, "namespace", "not_found") || Is(err, "namespace", "not") || Is(nil, "namespace", "not_found") {
		t.Error("Is wrong")
	}
	if _, ok := As(io.EOF); ok {
		t.Error("As found an *Error in io.EOF")
	}
	if _, ok := As(nil); ok {
		t.Error("As(nil) found an *Error")
	}
	// Outermost *Error wins when one wraps another.
	outer := DatacenterUnreachable("eu", inner)
	if e, _ := As(fmt.Errorf("x: %w", outer)); e.Key() != "datacenter.unreachable" || !errors.Is(outer, New("namespace", "not_found")) {
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
		{Unauthorized(), 401},
		{Forbidden(), 403},
		{ActorDuplicateKey("k", "a"), 409},
		{BadRequest("f", "r"), 400},
		{ServiceUnavailable(), 503},
		{New("guard", "request_timeout"), 504},
		{&Error{Group: "x", Code: "y"}, 500},
	} {
		if got := HTTPStatus(tt.err); got != tt.want {
			t.Errorf("HTTPStatus(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
	if Key(nil) != "" || Key(io.EOF) != "core.internal_error" || Key(NoKeys()) != "validation.no_keys" {
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
	for _, err := range []error{io.EOF, Corrupt("K", "bad"), Internal(io.EOF), New("api", "internal_error")} {
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
		{Forbidden(), `{"group":"api","code":"forbidden","message":"Access denied"}`},
		{NamespaceNotFound("prod"), `{"group":"namespace","code":"not_found","message":"Namespace 'prod' does not exist.","metadata":{"namespace":"prod"}}`},
		{TooManyActorIDs(32, 40), `{"group":"validation","code":"too_many_actor_ids","message":"Too many actor IDs provided. Maximum is 32, got 40","metadata":{"count":40,"max":32}}`},
		// No HTML escaping, no cause.
		{InvalidInput("a <b> & c").WithCause(io.EOF), `{"group":"validation","code":"invalid_input","message":"a <b> & c","metadata":{"message":"a <b> & c"}}`},
		// A value JSON cannot encode is sent as text instead of failing.
		{New("api", "bad_request", "reason", "r", "weird", math.Inf(1)), `{"group":"api","code":"bad_request","message":"Request is invalid: r","metadata":{"reason":"r","weird":"+Inf"}}`},
		{New("api", "bad_request", "reason", make(chan int)).WithMeta("reason", "ok"), `{"group":"api","code":"bad_request","message":"Request is invalid: ok","metadata":{"reason":"ok"}}`},
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
	b, _ := json.Marshal(map[string]any{"error": NoKeys()})
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
