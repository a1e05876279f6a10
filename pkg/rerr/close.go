package rerr

import (
	"strings"
	"unicode/utf8"
)

// MaxCloseReason is the longest WebSocket close reason in bytes: a control frame carries at
// most 125 payload bytes, 2 of which are the close code (RFC 6455 §5.5).
const MaxCloseReason = 123

// WebSocket close codes berth uses.
const (
	CloseNormal   = 1000 // ws.connection_closed, ws.eviction: the peer must not reconnect
	CloseProtocol = 1002 // ws.protocol_error: frames no client may send
	ClosePolicy   = 1008 // a refused token (api.unauthorized, api.forbidden), ws.message_index_skip
	CloseTooBig   = 1009 // ws.message_too_big
	CloseError    = 1011 // every other error: the peer reconnects with backoff
)

// CloseCode returns the WebSocket close code for ending a socket because of err: the catalog's
// code for err's group.code, 1011 for anything else, 1000 for nil.
func CloseCode(err error) int {
	if err == nil {
		return CloseNormal
	}
	if e, ok := As(err); ok {
		if ent, known := Lookup(e.Group, e.Code); known && ent.Close != 0 {
			return ent.Close
		}
	}
	return CloseError
}

// CloseReason returns the close reason Rivet peers parse: "group.code#ray_id" ("group.code"
// when rayID is empty), where group.code is Key(err) (core.internal_error outside the catalog,
// ws.connection_closed for nil). Invalid UTF-8 is replaced, and the result is cut to at most
// MaxCloseReason bytes on a character boundary.
func CloseReason(err error, rayID string) string {
	key := Key(err)
	if key == "" {
		key = "ws.connection_closed"
	}
	s := key
	if rayID != "" {
		s += "#" + rayID
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxCloseReason {
		return s
	}
	cut := MaxCloseReason
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}
