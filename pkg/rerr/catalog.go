package rerr

import (
	"fmt"
	"strings"
)

// Entry is one catalog row.
type Entry struct {
	Group, Code string
	// Status is the HTTP status, chosen by HTTP meaning: 404 for a missing resource, 409 for a
	// conflict with current state, 400 for invalid input, 401/403 for a missing/wrong token,
	// 502/503/504 for upstream failure, unavailability and timeouts.
	Status int
	// Message is the plain client-facing text, without placeholders. For codes the Rivet
	// engine also has, Message (and Detail, where Rivet formats one) is Rivet's text, except
	// where Rivet's plain message is itself a template (guard.connection_error,
	// ws.no_runner_config); Details that name an id are berth's.
	Message string
	// Detail, if set, is the message used when every {placeholder} in it has a value in the
	// error's metadata.
	Detail string
	// Meta lists the metadata keys callers set for this code; every placeholder of Detail is
	// one of them.
	Meta []string
	// Close is the WebSocket close code when this error ends a socket: 1000 (normal, the peer
	// must not reconnect), 1008 (policy), or 0 for the default, 1011 (error; the peer reconnects).
	Close int
	// Internal marks codes whose details are for operators only; Public hides them.
	Internal bool
}

const keyInternal = "core.internal_error"

// catalog lists every error berth returns. Codes are never renamed or reused: clients match on
// them. Rivet's codes come first, grouped as in its engine (docs/design.md, "Errors");
// berth's own codes are marked.
var catalog = []Entry{
	// core
	{Group: "core", Code: "internal_error", Status: 500, Message: "An internal error occurred",
		Meta: []string{"unknown_code"}, Internal: true},

	// api
	{Group: "api", Code: "bad_request", Status: 400, Message: "Request is invalid",
		Detail: "Request is invalid: {reason}", Meta: []string{"reason", "field"}},
	{Group: "api", Code: "unauthorized", Status: 401, Message: "Authentication required", Close: 1008},
	{Group: "api", Code: "forbidden", Status: 403, Message: "Access denied", Close: 1008},
	{Group: "api", Code: "not_found", Status: 404, Message: "The requested resource was not found"},
	{Group: "api", Code: "method_not_allowed", Status: 405, Message: "Method not allowed"},
	{Group: "api", Code: "internal_error", Status: 500, Message: "An internal server error occurred", Internal: true},

	// actor
	{Group: "actor", Code: "not_found", Status: 404, Message: "The actor does not exist or was destroyed.",
		Detail: "Actor '{actor_id}' does not exist or was destroyed.", Meta: []string{"actor_id"}},
	{Group: "actor", Code: "namespace_not_found", Status: 404, Message: "The namespace does not exist.",
		Detail: "Namespace '{namespace}' does not exist.", Meta: []string{"namespace"}},
	{Group: "actor", Code: "input_too_large", Status: 413, Message: "Actor input too large.",
		Detail: "Input too large (max {max_size} bytes).", Meta: []string{"max_size"}},
	{Group: "actor", Code: "empty_key", Status: 400, Message: "Key label cannot be empty."},
	{Group: "actor", Code: "key_too_large", Status: 400, Message: "Key label too large.",
		Detail: "Key label too large (max {max_size} bytes): {key_preview}", Meta: []string{"max_size", "key_preview"}},
	{Group: "actor", Code: "duplicate_key", Status: 409, Message: "Actor key already in use.",
		Detail: "Actor key '{key}' already in use for actor '{existing_actor_id}'", Meta: []string{"key", "existing_actor_id"}},
	// A concurrent destroy won the race with the request: a conflict with current state.
	{Group: "actor", Code: "destroyed_during_creation", Status: 409, Message: "Actor was destroyed during creation."},
	{Group: "actor", Code: "destroyed_while_waiting_for_ready", Status: 409, Message: "Actor was destroyed while waiting for ready state."},
	{Group: "actor", Code: "key_reserved_in_different_datacenter", Status: 409,
		Message: "Actor key is already reserved in a different datacenter. Either remove the datacenter constraint to automatically create this actor in the correct datacenter or provide the datacenter that matches.",
		Detail:  "Actor key is already reserved in the datacenter '{datacenter_label}'. Either remove the datacenter constraint to automatically create this actor in the correct datacenter or provide the datacenter that matches.",
		Meta:    []string{"datacenter_label"}},
	{Group: "actor", Code: "no_runner_config_configured", Status: 400,
		Message: "No runner config configured in any datacenter. Validate a provider is listed that matches requested pool name.",
		Detail:  "No runner config with name '{pool_name}' are available in any datacenter for the namespace '{namespace}'. Validate a provider is listed that matches the requested pool name.",
		Meta:    []string{"namespace", "pool_name"}},
	{Group: "actor", Code: "kv_key_not_found", Status: 404, Message: "The KV key does not exist for this actor."},
	// The payload is larger than the space left: "content too large" for this actor.
	{Group: "actor", Code: "kv_storage_quota_exceeded", Status: 413, Message: "Not enough space left in storage.",
		Detail: "Not enough space left in storage ({remaining} bytes remaining, current payload is {payload_size} bytes).",
		Meta:   []string{"remaining", "payload_size"}},

	// namespace
	{Group: "namespace", Code: "failed_to_create", Status: 400, Message: "Failed to create namespace.",
		Detail: "Failed to create namespace: {reason}", Meta: []string{"reason"}},
	{Group: "namespace", Code: "name_not_unique", Status: 409, Message: "Namespace name must be unique.",
		Detail: "Namespace name '{name}' is already in use.", Meta: []string{"name"}},
	{Group: "namespace", Code: "not_found", Status: 404, Message: "The namespace does not exist.",
		Detail: "Namespace '{namespace}' does not exist.", Meta: []string{"namespace"}},
	// The request reached a datacenter that cannot answer it (421 Misdirected Request).
	{Group: "namespace", Code: "not_leader", Status: 421, Message: "Attempting to run operation in non-leader datacenter."},
	{Group: "namespace", Code: "invalid_update", Status: 400, Message: "Failed to update namespace.",
		Detail: "Failed to update namespace: {reason}", Meta: []string{"reason"}},

	// runner, envoy
	{Group: "runner", Code: "not_found", Status: 404, Message: "The runner does not exist.",
		Detail: "Runner '{runner_id}' does not exist.", Meta: []string{"runner_id"}},
	// Sent by a runner (x-rivet-error) for a request to an actor it does not host; retryable.
	{Group: "runner", Code: "actor_not_found", Status: 503, Message: "Actor not found on this runner."},
	// berth: a ping or event from a runner socket that a newer connection superseded (fencing).
	{Group: "runner", Code: "stale_connection", Status: 409, Message: "A newer connection of this runner superseded this one.",
		Detail: "A newer connection of runner '{runner_id}' superseded this one.", Meta: []string{"runner_id"}},
	// berth
	{Group: "envoy", Code: "not_found", Status: 404, Message: "The envoy does not exist.",
		Detail: "Envoy '{envoy_key}' does not exist.", Meta: []string{"envoy_key"}},
	// berth: as runner.stale_connection, for envoys.
	{Group: "envoy", Code: "stale_connection", Status: 409, Message: "A newer connection of this envoy superseded this one.",
		Detail: "A newer connection of envoy '{envoy_key}' superseded this one.", Meta: []string{"envoy_key"}},
	// berth: the envoy missed its pings for too long and was expired; it must reconnect as new.
	{Group: "envoy", Code: "expired", Status: 410, Message: "The envoy has expired.",
		Detail: "Envoy '{envoy_key}' has expired.", Meta: []string{"envoy_key"}},

	// runner_config, serverless_runner_pool
	{Group: "runner_config", Code: "invalid", Status: 400, Message: "Invalid runner config.",
		Detail: "Invalid runner config: {reason}", Meta: []string{"reason"}},
	{Group: "runner_config", Code: "not_found", Status: 404, Message: "No config for this runner exists.",
		Detail: "No config exists for runner '{runner_name}'.", Meta: []string{"runner_name"}},
	{Group: "serverless_runner_pool", Code: "not_found", Status: 404, Message: "No serverless pool for this runner exists."},
	{Group: "serverless_runner_pool", Code: "failed_to_fetch_metadata", Status: 502, Message: "Failed to fetch serverless metadata.",
		Detail: "Failed to fetch serverless metadata: {reason}.", Meta: []string{"reason"}},

	// datacenter
	{Group: "datacenter", Code: "not_found", Status: 404, Message: "The provided datacenter does not exist.",
		Detail: "Datacenter '{datacenter}' does not exist.", Meta: []string{"datacenter"}},
	// berth: a peer datacenter that did not answer a forwarded or fanned-out request (connect
	// error, timeout, or a reply that is not a berth response).
	{Group: "datacenter", Code: "unreachable", Status: 502, Message: "A datacenter did not answer.",
		Detail: "Datacenter '{datacenter}' did not answer.", Meta: []string{"datacenter"}},

	// validation
	{Group: "validation", Code: "invalid_input", Status: 400, Message: "Invalid input provided",
		Detail: "{message}", Meta: []string{"message"}},
	{Group: "validation", Code: "too_many_actor_ids", Status: 400, Message: "Too many actor IDs provided",
		Detail: "Too many actor IDs provided. Maximum is {max}, got {count}", Meta: []string{"max", "count"}},
	{Group: "validation", Code: "no_keys", Status: 400, Message: "No keys provided. At least one key is required."},
	// A get-or-create raced a delete of the same key: a conflict, worth retrying.
	{Group: "validation", Code: "race_condition", Status: 409, Message: "Race condition detected",
		Detail: "Race condition detected between get_or_create and delete operations"},

	// store (berth)
	// Stored bytes that do not decode (bad length, unknown version, malformed BARE or tuple).
	{Group: "store", Code: "corrupt", Status: 500, Message: "Stored data is corrupt.",
		Detail: "Stored {what} is corrupt: {reason}", Meta: []string{"what", "reason"}, Internal: true},

	// pegboard: actor routing phases, each with its own budget.
	{Group: "pegboard", Code: "route_subscribe_timeout", Status: 504, Message: "Timed out subscribing to actor routing events.", Meta: phaseTimeout},
	{Group: "pegboard", Code: "route_fetch_actor_timeout", Status: 504, Message: "Timed out fetching actor routing state.", Meta: phaseTimeout},
	{Group: "pegboard", Code: "route_auth_check_timeout", Status: 504, Message: "Timed out checking actor route authorization.", Meta: phaseTimeout},
	{Group: "pegboard", Code: "route_wake_signal_timeout", Status: 504, Message: "Timed out sending actor wake signal.", Meta: phaseTimeout},
	{Group: "pegboard", Code: "route_resolve_query_timeout", Status: 504, Message: "Timed out resolving actor query route.", Meta: phaseTimeout},
	// Sent by a runner as the reason of its own close frame when it shuts down.
	{Group: "pegboard", Code: "runner_shutdown", Status: 503, Message: "The runner is shutting down.", Close: 1000},

	// guard: the ingress proxy and gateway. Tunnel errors carry the phase they happened in
	// (pre_request, waiting_for_response_start, pre_websocket_open, waiting_for_websocket_open,
	// hibernating_websocket).
	{Group: "guard", Code: "actor_ready_timeout", Status: 503, Message: "Timed out waiting for actor to become ready. Ensure that the pool selector is accurate and there are envoys available in the namespace you created this actor."},
	{Group: "guard", Code: "actor_runner_failed", Status: 503, Message: "Actor's runner pool is experiencing errors."},
	{Group: "guard", Code: "actor_stopped_while_waiting", Status: 503, Message: "Actor stopped while waiting for a response.", Meta: phase},
	{Group: "guard", Code: "actor_stopped_while_waiting_for_websocket_open", Status: 503, Message: "Actor stopped while waiting for WebSocket open.", Meta: phase},
	{Group: "guard", Code: "actor_wake_retries_exceeded", Status: 503, Message: "Actor wake retries exceeded."},
	{Group: "guard", Code: "connection_error", Status: 502, Message: "Connection error.",
		Detail: "Connection error: {error_message}.", Meta: []string{"error_message", "remote_addr"}},
	{Group: "guard", Code: "gateway_response_start_timeout", Status: 504, Message: "Timed out waiting for actor response start.", Meta: phase},
	{Group: "guard", Code: "http_request_build_failed", Status: 400, Message: "Failed to build HTTP request."},
	{Group: "guard", Code: "invalid_header", Status: 400, Message: "Invalid header value."},
	{Group: "guard", Code: "invalid_request", Status: 400, Message: "Invalid request."},
	{Group: "guard", Code: "invalid_request_body", Status: 413, Message: "Unable to parse request body."},
	{Group: "guard", Code: "invalid_response_body", Status: 502, Message: "Unable to parse response body."},
	{Group: "guard", Code: "missing_header", Status: 400, Message: "Missing header required for routing."},
	{Group: "guard", Code: "missing_query_parameter", Status: 400, Message: "Missing query parameter required for routing."},
	{Group: "guard", Code: "must_use_regional_host", Status: 421, Message: "Request must use a regional URL for this datacenter."},
	{Group: "guard", Code: "no_route", Status: 404, Message: "No route found."},
	{Group: "guard", Code: "no_route_targets", Status: 404, Message: "No targets found.",
		Detail: "No route targets found for {hostname}{path}.", Meta: []string{"hostname", "path"}},
	{Group: "guard", Code: "query_ambiguous_runner_configs", Status: 400, Message: "query gateway actor resolution found multiple runner configs for namespace"},
	{Group: "guard", Code: "query_duplicate_param", Status: 400, Message: "duplicate query gateway param"},
	{Group: "guard", Code: "query_empty_actor_name", Status: 400, Message: "query gateway actor name must not be empty"},
	{Group: "guard", Code: "query_get_disallowed_params", Status: 400, Message: "query gateway method=get does not allow rvt-input, rvt-region, rvt-crash-policy, or rvt-pool params"},
	{Group: "guard", Code: "query_invalid_base64_input", Status: 400, Message: "invalid base64url in query gateway input"},
	{Group: "guard", Code: "query_invalid_cbor_input", Status: 400, Message: "invalid query gateway input cbor"},
	{Group: "guard", Code: "query_invalid_params", Status: 400, Message: "invalid query gateway params"},
	{Group: "guard", Code: "query_invalid_percent_encoding", Status: 400, Message: "invalid percent-encoding for query gateway param"},
	{Group: "guard", Code: "query_missing_pool", Status: 400, Message: "query gateway method=getOrCreate requires rvt-pool param"},
	{Group: "guard", Code: "query_missing_runner_name", Status: 400, Message: "query gateway method=getOrCreate requires rvt-runner param"},
	{Group: "guard", Code: "query_no_runner_configs", Status: 400, Message: "query gateway actor resolution found no runner configs for namespace"},
	{Group: "guard", Code: "query_param_missing_equals", Status: 400, Message: "query gateway param is missing '='"},
	{Group: "guard", Code: "query_path_token_syntax", Status: 400, Message: "query gateway paths must not use @token syntax"},
	{Group: "guard", Code: "query_unknown_param", Status: 400, Message: "unknown query gateway param"},
	{Group: "guard", Code: "rate_limit", Status: 429, Message: "Too many requests. Try again later."},
	{Group: "guard", Code: "request_body_too_large", Status: 413, Message: "Request body too large."},
	{Group: "guard", Code: "request_build_error", Status: 400, Message: "Request build error.",
		Detail: "Request build error: {error}.", Meta: []string{"error"}},
	{Group: "guard", Code: "request_timeout", Status: 504, Message: "Request timed out.",
		Detail: "Request timed out during {phase} after {timeout_seconds} seconds.", Meta: []string{"phase", "timeout_seconds"}},
	{Group: "guard", Code: "response_body_too_large", Status: 502, Message: "Response body too large."},
	{Group: "guard", Code: "retry_attempts_exceeded", Status: 502, Message: "Retry attempts exceeded.",
		Detail: "All {attempts} retry attempts failed for {last_target_kind}. Last status: {last_status}. Last error: {last_error_code}.",
		Meta:   []string{"attempts", "last_error_code", "last_status", "last_target_kind"}},
	{Group: "guard", Code: "route_api_public_timeout", Status: 504, Message: "Timed out resolving the api-public route.", Meta: phaseTimeout},
	{Group: "guard", Code: "route_auth_check_timeout", Status: 504, Message: "Timed out checking route authorization.", Meta: phaseTimeout},
	{Group: "guard", Code: "route_compute_timeout", Status: 504, Message: "Timed out resolving the compute gateway route.", Meta: phaseTimeout},
	{Group: "guard", Code: "route_dispatch_timeout", Status: 504, Message: "Timed out dispatching route resolution to a routing module.",
		Meta: []string{"router", "elapsed_ms", "timeout_ms"}},
	{Group: "guard", Code: "service_unavailable", Status: 503, Message: "Service unavailable."},
	{Group: "guard", Code: "target_changed", Status: 502, Message: "WebSocket target changed, retry not possible."},
	{Group: "guard", Code: "tunnel_message_timeout", Status: 504, Message: "Actor tunnel message timed out.", Meta: phase},
	{Group: "guard", Code: "tunnel_request_aborted", Status: 503, Message: "Actor tunnel aborted the request.", Meta: phase},
	{Group: "guard", Code: "tunnel_response_closed", Status: 503, Message: "Actor tunnel closed before sending a response.", Meta: phase},
	{Group: "guard", Code: "upstream_error", Status: 502, Message: "Upstream error.",
		Detail: "Upstream error: {error}.", Meta: []string{"error"}},
	{Group: "guard", Code: "uri_parse_error", Status: 400, Message: "URI parse error."},
	{Group: "guard", Code: "websocket_closed_before_open", Status: 502, Message: "WebSocket closed before opening.", Meta: phase},
	{Group: "guard", Code: "websocket_garbage_collected", Status: 503, Message: "WebSocket request was garbage collected.", Meta: phase},
	{Group: "guard", Code: "websocket_open_dropped", Status: 503, Message: "WebSocket open was dropped.", Meta: phase},
	{Group: "guard", Code: "websocket_open_response_closed", Status: 502, Message: "WebSocket open response closed.", Meta: phase},
	{Group: "guard", Code: "websocket_open_timeout", Status: 504, Message: "Timed out waiting for WebSocket open.", Meta: phase},
	{Group: "guard", Code: "websocket_pending_limit_reached", Status: 503, Message: "Reached limit on pending websocket messages, aborting connection."},
	// Internal sentinel: the actor hibernates while the client socket stays open.
	{Group: "guard", Code: "websocket_service_hibernate", Status: 503, Message: "Initiate WebSocket service hibernation."},
	{Group: "guard", Code: "websocket_service_timeout", Status: 504, Message: "WebSocket service timed out."},
	// Retryable sentinel for WebSocket routing.
	{Group: "guard", Code: "websocket_service_unavailable", Status: 503, Message: "WebSocket service unavailable."},
	{Group: "guard", Code: "websocket_tunnel_ping_timeout", Status: 504, Message: "WebSocket tunnel ping timed out.", Meta: phase},
	{Group: "guard", Code: "websocket_tunnel_subscription_closed", Status: 503, Message: "WebSocket tunnel subscription closed.", Meta: phase},
	{Group: "guard", Code: "wrong_addr_protocol", Status: 400, Message: "Attempted to access a address using the wrong protocol."},

	// berth: the actor SQLite page store (envoy protocol v8 Sqlite* requests), answered in a
	// SqliteErrorResponse.
	{Group: "sqlite", Code: "fenced", Status: 409, Message: "The actor's SQLite database belongs to another placement of the actor.",
		Detail: "The SQLite database of actor {actor_id} refused generation {generation}: {reason}.", Meta: []string{"actor_id", "generation", "reason"}},
	{Group: "sqlite", Code: "head_mismatch", Status: 409, Message: "The SQLite database is not at the expected transaction.",
		Detail: "The SQLite database is at transaction {head_txid}, not {expected_head_txid}.", Meta: []string{"head_txid", "expected_head_txid"}},
	{Group: "sqlite", Code: "stage_not_found", Status: 404, Message: "No staged SQLite commit with that transaction id is open.",
		Detail: "No staged SQLite commit {txid} is open: {reason}.", Meta: []string{"txid", "reason"}},
	{Group: "sqlite", Code: "invalid_request", Status: 400, Message: "The SQLite request is invalid.",
		Detail: "The SQLite request is invalid: {reason}.", Meta: []string{"reason"}},
	{Group: "sqlite", Code: "too_large", Status: 413, Message: "The SQLite request exceeds a limit.",
		Detail: "The SQLite request exceeds a limit: {reason}.", Meta: []string{"reason"}},
	{Group: "sqlite", Code: "read_only", Status: 409, Message: "The actor is running: SQL run by the engine against its database is read-only.",
		Detail: "The actor is running: SQL run by the engine against its database is read-only ({reason}).", Meta: []string{"reason"}},
	{Group: "sqlite", Code: "statement_failed", Status: 400, Message: "The SQL statement failed.",
		Detail: "The SQL statement failed: {reason}.", Meta: []string{"reason"}},

	// ws: reasons for closing a runner or envoy socket. The status applies only when such an
	// error is answered over HTTP instead (before an upgrade).
	{Group: "ws", Code: "connection_closed", Status: 410, Message: "Normal connection close.", Close: 1000},
	// A newer socket with the same namespace, name and key took over; the runner must not reconnect.
	{Group: "ws", Code: "eviction", Status: 409, Message: "The websocket has been evicted and should not attempt to reconnect.", Close: 1000},
	{Group: "ws", Code: "going_away", Status: 503, Message: "The Rivet Engine is migrating. The websocket should attempt to reconnect as soon as possible."},
	// The peer stopped answering pings: the client side of the socket timed out (408).
	{Group: "ws", Code: "timed_out", Status: 408, Message: "Ping timed out."},
	{Group: "ws", Code: "timed_out_waiting_for_init", Status: 408, Message: "Timed out waiting for the init packet to be sent."},
	{Group: "ws", Code: "invalid_initial_packet", Status: 400, Message: "The websocket could not process the initial packet."},
	{Group: "ws", Code: "invalid_packet", Status: 400, Message: "The websocket could not process the given packet."},
	{Group: "ws", Code: "protocol_error", Status: 400, Message: "The client broke the WebSocket protocol.", Close: 1002},
	{Group: "ws", Code: "message_too_big", Status: 413, Message: "A WebSocket frame is larger than the engine takes.", Close: 1009},
	{Group: "ws", Code: "invalid_request", Status: 400, Message: "The websocket could not open due to an invalid request."},
	{Group: "ws", Code: "invalid_url", Status: 400, Message: "The connection URL is invalid."},
	{Group: "ws", Code: "no_runner_config", Status: 400, Message: "Must create a runner config before connecting.",
		Detail: "Must create a runner config before connecting an envoy with pool name {pool_name}.", Meta: []string{"pool_name"}},
	// Sent by a runner when the gateway skips a message index of a hibernatable socket.
	{Group: "ws", Code: "message_index_skip", Status: 400, Message: "A WebSocket message index was skipped.", Close: 1008},
}

var (
	phase        = []string{"phase"}
	phaseTimeout = []string{"elapsed_ms", "timeout_ms"}
)

// index maps "group.code" to its catalog row. Built once; the catalog test checks uniqueness.
var index = func() map[string]*Entry {
	m := make(map[string]*Entry, len(catalog))
	for i := range catalog {
		m[catalog[i].Group+"."+catalog[i].Code] = &catalog[i]
	}
	return m
}()

// Lookup returns the catalog entry for group.code.
func Lookup(group, code string) (Entry, bool) {
	if e := index[group+"."+code]; e != nil {
		return *e, true
	}
	return Entry{}, false
}

// Entries returns a copy of the whole catalog, in catalog order.
func Entries() []Entry {
	out := make([]Entry, len(catalog))
	copy(out, catalog)
	return out
}

// render returns the entry's Detail filled from meta when every placeholder has a value,
// else its plain Message.
func (e *Entry) render(meta map[string]any) string {
	if e.Detail != "" {
		if s, ok := fill(e.Detail, meta); ok {
			return s
		}
	}
	return e.Message
}

// fill replaces each {name} in tpl (name made of a-z, 0-9 and _) with fmt.Sprint of meta[name];
// it reports false if a name has no value. Braces around anything else are literal text.
func fill(tpl string, meta map[string]any) (string, bool) {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(tpl)
			return b.String(), true
		}
		j := strings.IndexByte(tpl[i+1:], '}')
		if j < 0 || !isName(tpl[i+1:i+1+j]) {
			b.WriteString(tpl[:i+1])
			tpl = tpl[i+1:]
			continue
		}
		v, ok := meta[tpl[i+1:i+1+j]]
		if !ok {
			return "", false
		}
		b.WriteString(tpl[:i])
		if s, isStr := v.(string); isStr {
			b.WriteString(s)
		} else {
			fmt.Fprint(&b, v)
		}
		tpl = tpl[i+2+j:]
	}
}

// placeholders returns the {names} in tpl, in order.
func placeholders(tpl string) []string {
	var out []string
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(tpl[i+1:], '}')
		if j < 0 {
			return out
		}
		if name := tpl[i+1 : i+1+j]; isName(name) {
			out = append(out, name)
			tpl = tpl[i+2+j:]
		} else {
			tpl = tpl[i+1:]
		}
	}
}

// isName reports whether s is a catalog token: non-empty, only a-z, 0-9 and _.
func isName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
