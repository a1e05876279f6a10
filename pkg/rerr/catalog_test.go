package rerr

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/rerr/internal/tmpl"
)

func TestCatalogWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, e := range catalog {
		key := e.Group + "." + e.Code
		if seen[key] {
			t.Errorf("%s: listed twice", key)
		}
		seen[key] = true
		if !tmpl.IsToken(e.Group) || !tmpl.IsToken(e.Code) {
			t.Errorf("%s: group and code must be a-z, 0-9 and _", key)
		}
		if e.Status < 400 || e.Status > 599 || http.StatusText(e.Status) == "" {
			t.Errorf("%s: status %d is not an HTTP error status", key, e.Status)
		}
		if strings.TrimSpace(e.Message) == "" || e.Message != strings.TrimSpace(e.Message) {
			t.Errorf("%s: message %q is empty or padded", key, e.Message)
		}
		if p := tmpl.Placeholders(e.Message); len(p) > 0 {
			t.Errorf("%s: the plain message has placeholders %v; put them in Detail", key, p)
		}
		for _, p := range tmpl.Placeholders(e.Detail) {
			if !slices.Contains(e.Meta, p) {
				t.Errorf("%s: placeholder {%s} of Detail is not in Meta %v", key, p, e.Meta)
			}
		}
		if strings.Count(e.Detail, "{") != len(tmpl.Placeholders(e.Detail)) {
			t.Errorf("%s: Detail %q has a brace that is not a placeholder", key, e.Detail)
		}
		for _, m := range e.Meta {
			if !tmpl.IsToken(m) {
				t.Errorf("%s: metadata key %q is not a token", key, m)
			}
		}
		if e.Close != 0 && !slices.Contains([]int{CloseNormal, CloseProtocol, ClosePolicy, CloseTooBig}, e.Close) {
			t.Errorf("%s: close code %d", key, e.Close)
		}
		for _, o := range e.Optional {
			if !slices.Contains(e.Meta, o) {
				t.Errorf("%s: optional key %q is not in Meta %v", key, o, e.Meta)
			}
		}
		if got, ok := Lookup(e.Group, e.Code); !ok || got.Message != e.Message {
			t.Errorf("%s: Lookup does not find it", key)
		}
		if c := ParseCode(key); c.Key() != key || c.String() != key || catalog[c-1].Message != e.Message {
			t.Errorf("%s: ParseCode gives %v", key, c)
		}
	}
	if len(index) != len(catalog) {
		t.Errorf("index has %d entries, catalog %d", len(index), len(catalog))
	}
}

// TestCatalogCovers lists every code berth relies on (Rivet's, as docs/design.md, docs/gateway.md
// and docs/protocol.md list them, and berth's own), so none is dropped by accident.
func TestCatalogCovers(t *testing.T) {
	want := []string{
		"core.internal_error",
		"api.bad_request", "api.unauthorized", "api.forbidden", "api.not_found", "api.internal_error",
		"actor.not_found", "actor.namespace_not_found", "actor.input_too_large", "actor.empty_key",
		"actor.key_too_large", "actor.duplicate_key", "actor.destroyed_during_creation",
		"actor.destroyed_while_waiting_for_ready", "actor.key_reserved_in_different_datacenter",
		"actor.no_runner_config_configured", "actor.kv_key_not_found", "actor.kv_storage_quota_exceeded",
		"namespace.failed_to_create", "namespace.name_not_unique", "namespace.not_found",
		"namespace.not_leader", "namespace.invalid_update",
		"runner.not_found", "runner_config.invalid", "runner_config.not_found", "datacenter.not_found",
		"serverless_runner_pool.not_found", "serverless_runner_pool.failed_to_fetch_metadata",
		"validation.invalid_input", "validation.too_many_actor_ids", "validation.no_keys", "validation.race_condition",
		"pegboard.route_subscribe_timeout", "pegboard.route_fetch_actor_timeout", "pegboard.route_auth_check_timeout",
		"pegboard.route_wake_signal_timeout", "pegboard.route_resolve_query_timeout",
		"ws.connection_closed", "ws.eviction", "ws.going_away", "ws.timed_out", "ws.timed_out_waiting_for_init",
		"ws.invalid_initial_packet", "ws.invalid_packet", "ws.invalid_request", "ws.invalid_url", "ws.no_runner_config",
		// berth
		"envoy.not_found", "runner.stale_connection", "envoy.stale_connection", "envoy.expired",
		"datacenter.unreachable", "store.corrupt",
	}
	for _, c := range []string{"actor_ready_timeout", "actor_runner_failed", "actor_stopped_while_waiting",
		"actor_stopped_while_waiting_for_websocket_open", "actor_wake_retries_exceeded", "connection_error",
		"gateway_response_start_timeout", "http_request_build_failed", "invalid_header", "invalid_request",
		"invalid_request_body", "invalid_response_body", "missing_header", "missing_query_parameter",
		"must_use_regional_host", "no_route", "no_route_targets", "query_ambiguous_runner_configs",
		"query_duplicate_param", "query_empty_actor_name", "query_get_disallowed_params",
		"query_invalid_base64_input", "query_invalid_cbor_input", "query_invalid_params",
		"query_invalid_percent_encoding", "query_missing_pool", "query_missing_runner_name",
		"query_no_runner_configs", "query_param_missing_equals", "query_path_token_syntax",
		"query_unknown_param", "rate_limit", "request_body_too_large", "request_build_error",
		"request_timeout", "response_body_too_large", "retry_attempts_exceeded", "route_api_public_timeout",
		"route_auth_check_timeout", "route_compute_timeout", "route_dispatch_timeout", "service_unavailable",
		"target_changed", "tunnel_message_timeout", "tunnel_request_aborted", "tunnel_response_closed",
		"upstream_error", "uri_parse_error", "websocket_closed_before_open", "websocket_garbage_collected",
		"websocket_open_dropped", "websocket_open_response_closed", "websocket_open_timeout",
		"websocket_pending_limit_reached", "websocket_service_hibernate", "websocket_service_timeout",
		"websocket_service_unavailable", "websocket_tunnel_ping_timeout", "websocket_tunnel_subscription_closed",
		"wrong_addr_protocol"} {
		want = append(want, "guard."+c)
	}
	for _, k := range want {
		if index[k] == 0 {
			t.Errorf("catalog lacks %s", k)
		}
	}
}

// TestStatuses checks the HTTP meaning of the catalog's statuses, rule by rule.
func TestStatuses(t *testing.T) {
	exceptions := map[string]int{
		// A runner answers 503 for an actor it does not host, so that the gateway retries.
		"runner.actor_not_found": 503,
		// A concurrent get-or-create and delete: a conflict, not invalid input.
		"validation.race_condition": 409,
		// Close reasons whose peer timed out (the client side): 408, not 504.
		"ws.timed_out": 408, "ws.timed_out_waiting_for_init": 408,
		// No host came for the actor in time: unavailable, as on Rivet.
		"guard.actor_ready_timeout": 503,
	}
	for _, e := range catalog {
		key := e.Group + "." + e.Code
		want := 0
		switch {
		case exceptions[key] != 0:
			want = exceptions[key]
		case e.Code == "not_found" || strings.HasSuffix(e.Code, "_not_found"):
			want = 404
		case e.Code == "duplicate_key" || e.Code == "name_not_unique" || e.Code == "stale_connection":
			want = 409
		case strings.Contains(e.Code, "timeout") || strings.Contains(e.Code, "timed_out"):
			want = 504
		case key == "api.bad_request" || e.Group == "validation" || strings.HasPrefix(e.Code, "invalid") && e.Group != "guard":
			want = 400
		case strings.HasPrefix(e.Code, "query_"):
			want = 400
		case e.Code == "service_unavailable" || e.Code == "websocket_service_unavailable":
			want = 503
		case strings.HasSuffix(e.Code, "internal_error") || key == "store.corrupt":
			want = 500
		}
		if want != 0 && e.Status != want {
			t.Errorf("%s: status %d, want %d", key, e.Status, want)
		}
	}
	for key, want := range map[string]int{
		"api.unauthorized": 401, "api.forbidden": 403, "api.method_not_allowed": 405,
		"guard.rate_limit": 429, "guard.request_body_too_large": 413, "guard.invalid_request_body": 413, "guard.no_route": 404,
		"guard.upstream_error": 502, "guard.retry_attempts_exceeded": 502, "guard.invalid_response_body": 502,
		"actor.input_too_large": 413, "datacenter.unreachable": 502, "envoy.expired": 410,
		"ws.going_away": 503, "ws.eviction": 409,
	} {
		if got := catalog[index[key]-1].Status; got != want {
			t.Errorf("%s: status %d, want %d", key, got, want)
		}
	}
}

func TestCode(t *testing.T) {
	if CodeActorDuplicateKey.Key() != "actor.duplicate_key" || CodeWSEviction.String() != "ws.eviction" {
		t.Fatal("Key or String wrong")
	}
	if e, ok := CodeNamespaceNotFound.Entry(); !ok || e.Status != 404 || e.Meta[0] != "namespace" {
		t.Fatalf("Entry = %+v, %v", e, ok)
	}
	var none Code
	if none.Key() != "" || none.String() != "rerr.Code(0)" || Code(len(catalog)+1).Key() != "" {
		t.Fatal("a Code outside the catalog has a key")
	}
	if _, ok := none.Entry(); ok {
		t.Fatal("the zero Code has an entry")
	}
	if ParseCode("actor.nope") != 0 || ParseCode("") != 0 || ParseCode("runner.actor_not_found") != CodeRunnerActorNotFound {
		t.Fatal("ParseCode wrong")
	}
	if int(CodeWSMessageIndexSkip) != len(catalog) || CodeCoreInternalError != 1 {
		t.Fatal("the constants do not follow the catalog's order")
	}
}
