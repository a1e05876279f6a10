package rerr

import (
	"fmt"

	"unicode/utf8"
)

// newError builds the error of catalog code c with metadata md (nil or empty for none); the
// generated constructors call it.
func newError(c Code, md map[string]any) *Error {
	ent := c.entry()
	if len(md) == 0 {
		md = nil
	}
	return &Error{
		Group:    ent.Group,
		Code:     ent.Code,
		Message:  ent.render(md),
		Metadata: md,
		Status:   ent.Status,
	}
}

// FromWire builds the catalog error group.code, without metadata, for a code received from a
// peer as text: the close reason another node relays, or a runner's x-rivet-error header. An
// error this process raises comes from its generated constructor (ActorNotFound, ...), never
// from here.
//
// FromWire never panics: a code this node's catalog lacks yields core.internal_error with
// metadata {"unknown_code": "group.code"}, so the mismatch shows up in the response and the
// logs.
func FromWire(group, code string) *Error {
	if c := index[group+"."+code]; c != 0 {
		return newError(c, nil)
	}
	return coreInternalError(group + "." + code)
}

// The hand-written constructors: each builds a code whose generated constructor is
// unexported (catalog.yaml's custom), adding what the generated one cannot.

// BadRequest is api.bad_request: the request (body, query or path) is malformed. field names
// the offending input ("" if none); reason says what is wrong with it.
func BadRequest(field, reason string) *Error {
	if field == "" {
		return apiBadRequest(reason, "")
	}
	return apiBadRequest(field+": "+reason, field)
}

// FailedToFetchMetadata is serverless_runner_pool.failed_to_fetch_metadata with reason (the
// error envelope of docs/serverless.md, § 2.8) as metadata and, as on the Rivet engine, the
// message "Failed to fetch serverless metadata: {reason}." with the placeholder left as is.
func FailedToFetchMetadata(reason any) *Error {
	e := serverlessRunnerPoolFailedToFetchMetadata(reason)
	e.Message = "Failed to fetch serverless metadata: {reason}."
	return e
}

// Internal is core.internal_error wrapping cause (logged, never sent).
func Internal(cause error) *Error { return coreInternalError("").WithCause(cause) }

// Corrupt is store.corrupt: stored bytes of what (a key or value type) do not decode. It is
// Internal: clients see core.internal_error through Public.
func Corrupt(what, format string, args ...any) *Error {
	return storeCorrupt(what, fmt.Sprintf(format, args...))
}

// keyPreviewLen is how many bytes of an oversized key actor.key_too_large quotes.
const keyPreviewLen = 64

// ActorKeyTooLarge is actor.key_too_large; the message quotes the key's first 64 bytes.
func ActorKeyTooLarge(maxSize int, key string) *Error {
	return actorKeyTooLarge(maxSize, preview(key, keyPreviewLen))
}

// DatacenterUnreachable is datacenter.unreachable: the peer datacenter did not answer; cause
// says why (logged only).
func DatacenterUnreachable(datacenter string, cause error) *Error {
	return datacenterUnreachable(datacenter).WithCause(cause)
}

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
