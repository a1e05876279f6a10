package rerr

import (
	"fmt"

	"unicode/utf8"
)

// New builds the catalog error group.code with metadata from key/value pairs, like log/slog:
// New("actor", "duplicate_key", "key", k, "existing_actor_id", id). A key that is not a string
// is used as its fmt.Sprint text; a value without a key is stored under "!BADKEY".
//
// New never panics: an unknown group.code yields core.internal_error with metadata
// {"unknown_code": "group.code"}, so the mistake shows up in the response and the logs.
func New(group, code string, meta ...any) *Error {
	ent := index[group+"."+code]
	if ent == nil {
		ent = index[keyInternal]
		meta = []any{"unknown_code", group + "." + code}
	}
	var md map[string]any
	if len(meta) > 0 {
		md = make(map[string]any, (len(meta)+1)/2)
		for i := 0; i < len(meta); i += 2 {
			if i+1 == len(meta) {
				md["!BADKEY"] = meta[i]
				break
			}
			k, ok := meta[i].(string)
			if !ok {
				k = fmt.Sprint(meta[i])
			}
			md[k] = meta[i+1]
		}
	}
	return &Error{
		Group:    ent.Group,
		Code:     ent.Code,
		Message:  ent.render(md),
		Metadata: md,
		Status:   ent.Status,
	}
}

// Constructors for the common codes. Each fills the metadata its catalog entry lists.

// BadRequest is api.bad_request: the request (body, query or path) is malformed. field names
// the offending input ("" if none); reason says what is wrong with it.
func BadRequest(field, reason string) *Error {
	if field == "" {
		return New("api", "bad_request", "reason", reason)
	}
	return New("api", "bad_request", "reason", field+": "+reason, "field", field)
}

// Unauthorized is api.unauthorized: a token is required and none was given (401).
func Unauthorized() *Error { return New("api", "unauthorized") }

// Forbidden is api.forbidden: the token given is wrong (403).
func Forbidden() *Error { return New("api", "forbidden") }

// NotFound is api.not_found: no such route or resource.
func NotFound() *Error { return New("api", "not_found") }

// MethodNotAllowed is api.method_not_allowed: the route exists, the method does not.
func MethodNotAllowed() *Error { return New("api", "method_not_allowed") }

// Internal is core.internal_error wrapping cause (logged, never sent).
func Internal(cause error) *Error { return New("core", "internal_error").WithCause(cause) }

// Corrupt is store.corrupt: stored bytes of what (a key or value type) do not decode. It is
// Internal: clients see core.internal_error through Public.
func Corrupt(what, format string, args ...any) *Error {
	return New("store", "corrupt", "what", what, "reason", fmt.Sprintf(format, args...))
}

// ActorNotFound is actor.not_found.
func ActorNotFound(actorID string) *Error { return New("actor", "not_found", "actor_id", actorID) }

// ActorNamespaceNotFound is actor.namespace_not_found: an actor call named an unknown namespace.
func ActorNamespaceNotFound(namespace string) *Error {
	return New("actor", "namespace_not_found", "namespace", namespace)
}

// ActorInputTooLarge is actor.input_too_large.
func ActorInputTooLarge(maxSize int) *Error {
	return New("actor", "input_too_large", "max_size", maxSize)
}

// ActorEmptyKey is actor.empty_key.
func ActorEmptyKey() *Error { return New("actor", "empty_key") }

// keyPreviewLen is how many bytes of an oversized key actor.key_too_large quotes.
const keyPreviewLen = 64

// ActorKeyTooLarge is actor.key_too_large; the message quotes the key's first 64 bytes.
func ActorKeyTooLarge(maxSize int, key string) *Error {
	return New("actor", "key_too_large", "max_size", maxSize, "key_preview", preview(key, keyPreviewLen))
}

// ActorDuplicateKey is actor.duplicate_key: key is held by existingActorID.
func ActorDuplicateKey(key, existingActorID string) *Error {
	return New("actor", "duplicate_key", "key", key, "existing_actor_id", existingActorID)
}

// ActorKeyReservedInDifferentDatacenter is actor.key_reserved_in_different_datacenter.
func ActorKeyReservedInDifferentDatacenter(label uint16) *Error {
	return New("actor", "key_reserved_in_different_datacenter", "datacenter_label", label)
}

// NoRunnerConfigConfigured is actor.no_runner_config_configured: no datacenter has a runner
// config for the pool.
func NoRunnerConfigConfigured(namespace, poolName string) *Error {
	return New("actor", "no_runner_config_configured", "namespace", namespace, "pool_name", poolName)
}

// KVKeyNotFound is actor.kv_key_not_found.
func KVKeyNotFound() *Error { return New("actor", "kv_key_not_found") }

// KVStorageQuotaExceeded is actor.kv_storage_quota_exceeded.
func KVStorageQuotaExceeded(remaining, payloadSize int64) *Error {
	return New("actor", "kv_storage_quota_exceeded", "remaining", remaining, "payload_size", payloadSize)
}

// NamespaceFailedToCreate is namespace.failed_to_create, e.g. reason "name too short".
func NamespaceFailedToCreate(reason string) *Error {
	return New("namespace", "failed_to_create", "reason", reason)
}

// NamespaceNameNotUnique is namespace.name_not_unique.
func NamespaceNameNotUnique(name string) *Error {
	return New("namespace", "name_not_unique", "name", name)
}

// NamespaceNotFound is namespace.not_found.
func NamespaceNotFound(name string) *Error { return New("namespace", "not_found", "namespace", name) }

// NamespaceNotLeader is namespace.not_leader: the operation must run in the leader datacenter.
func NamespaceNotLeader() *Error { return New("namespace", "not_leader") }

// NamespaceInvalidUpdate is namespace.invalid_update.
func NamespaceInvalidUpdate(reason string) *Error {
	return New("namespace", "invalid_update", "reason", reason)
}

// RunnerNotFound is runner.not_found.
func RunnerNotFound(runnerID string) *Error { return New("runner", "not_found", "runner_id", runnerID) }

// RunnerStaleConnection is runner.stale_connection: the socket was superseded (fencing).
func RunnerStaleConnection(runnerID string) *Error {
	return New("runner", "stale_connection", "runner_id", runnerID)
}

// EnvoyNotFound is envoy.not_found.
func EnvoyNotFound(envoyKey string) *Error { return New("envoy", "not_found", "envoy_key", envoyKey) }

// EnvoyStaleConnection is envoy.stale_connection.
func EnvoyStaleConnection(envoyKey string) *Error {
	return New("envoy", "stale_connection", "envoy_key", envoyKey)
}

// EnvoyExpired is envoy.expired.
func EnvoyExpired(envoyKey string) *Error { return New("envoy", "expired", "envoy_key", envoyKey) }

// RunnerConfigInvalid is runner_config.invalid.
func RunnerConfigInvalid(reason string) *Error {
	return New("runner_config", "invalid", "reason", reason)
}

// RunnerConfigNotFound is runner_config.not_found.
func RunnerConfigNotFound(runnerName string) *Error {
	return New("runner_config", "not_found", "runner_name", runnerName)
}

// DatacenterNotFound is datacenter.not_found.
func DatacenterNotFound(name string) *Error {
	return New("datacenter", "not_found", "datacenter", name)
}

// DatacenterUnreachable is datacenter.unreachable: the peer datacenter did not answer; cause
// says why (logged only).
func DatacenterUnreachable(datacenter string, cause error) *Error {
	return New("datacenter", "unreachable", "datacenter", datacenter).WithCause(cause)
}

// InvalidInput is validation.invalid_input; message is the whole client-facing text.
func InvalidInput(message string) *Error {
	return New("validation", "invalid_input", "message", message)
}

// TooManyActorIDs is validation.too_many_actor_ids.
func TooManyActorIDs(max, count int) *Error {
	return New("validation", "too_many_actor_ids", "max", max, "count", count)
}

// NoKeys is validation.no_keys.
func NoKeys() *Error { return New("validation", "no_keys") }

// RaceCondition is validation.race_condition.
func RaceCondition() *Error { return New("validation", "race_condition") }

// ServiceUnavailable is guard.service_unavailable (for instance while the node drains).
func ServiceUnavailable() *Error { return New("guard", "service_unavailable") }

// RateLimited is guard.rate_limit.
func RateLimited() *Error { return New("guard", "rate_limit") }

// WS builds the ws.<code> close reason, e.g. WS("eviction"), WS("invalid_packet").
// An unknown code yields core.internal_error, as with New.
func WS(code string) *Error { return New("ws", code) }

// preview returns s cut to at most n bytes on a rune boundary, with "…" appended if cut.
func preview(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
