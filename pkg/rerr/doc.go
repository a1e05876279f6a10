// Package rerr is berth's error catalog: every error a client can see is a (group, code) pair with
// an HTTP status, a message template filled from metadata, and a WebSocket close reason.
//
// The catalog is data (catalog.go); New and the constructors build an *Error from it, and a
// test keeps codes unique. Callers match on group and code, never on message text:
//
//	if rerr.Is(err, "namespace", "not_found") { … }
//	if e, ok := rerr.As(err); ok && e.Code == "duplicate_key" { … }
//	errors.Is(err, rerr.New("actor", "not_found")) // Is compares group and code only
//
// An *Error keeps the error that caused it (WithCause, Unwrap) for logs; the cause never
// reaches a client. The client sees JSON {"group", "code", "message", "metadata"?} (MarshalJSON),
// the HTTP status (HTTPStatus), or a close frame with CloseCode and CloseReason
// ("group.code#ray_id", at most 123 bytes). Public hides errors that only the operator should
// see, and turns errors from outside the catalog into core.internal_error.
package rerr
