// Package rerr is berth's error catalog: every error a client can see is a (group, code) pair with
// an HTTP status, a message template filled from metadata, and a WebSocket close reason.
//
// The catalog is data, catalog.yaml, from which go generate writes catalog_gen.go: the table,
// a Code constant per code, and a constructor per code taking the code's metadata keys as
// parameters, so that a misspelt code or key does not compile:
//
//	return rerr.ActorDuplicateKey(key, existing.String())
//
// A few codes are built by hand-written constructors that add to the generated one
// (BadRequest, Internal, Corrupt, ActorKeyTooLarge, DatacenterUnreachable). Callers match on
// the Code, never on message text:
//
//	if rerr.Is(err, rerr.CodeNamespaceNotFound) { … }
//	switch rerr.CodeOf(err) { case rerr.CodeEnvoyExpired, rerr.CodeEnvoyNotFound: … }
//
// Codes received as text from a peer are matched with ParseCode and rebuilt with FromWire.
//
// An *Error keeps the error that caused it (WithCause, Unwrap) for logs; the cause never
// reaches a client. The client sees JSON {"group", "code", "message", "metadata"?} (MarshalJSON),
// the HTTP status (HTTPStatus), or a close frame with CloseCode and CloseReason
// ("group.code#ray_id", at most 123 bytes). Public hides errors that only the operator should
// see, and turns errors from outside the catalog into core.internal_error.
package rerr
