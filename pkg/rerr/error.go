package rerr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
)

// Error is an error from the catalog, or one received from another berth (see Parse).
//
// Treat an *Error as immutable: WithCause and WithMeta return modified copies, and Metadata
// must not be changed in place, since copies share it.
type Error struct {
	Group string // e.g. "namespace"
	Code  string // e.g. "not_found"
	// Message is the client-facing text: the entry's Detail template filled from Metadata when
	// every placeholder has a value, else its plain Message.
	Message string
	// Metadata holds the entry's fields (see Entry.Meta); sent to clients as "metadata".
	Metadata map[string]any
	// Status is the HTTP status for this error.
	Status int

	cause error // for logs only; never sent to clients
}

// Error returns "group.code: message", followed by ": cause" when there is a cause.
func (e *Error) Error() string {
	s := e.Group + "." + e.Code + ": " + e.Message
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

// Unwrap returns the cause, so errors.Is and errors.As see through an *Error to it.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same group and code; metadata, message and
// cause do not matter. It makes errors.Is(err, rerr.NamespaceNotFound("")) match by code; the
// package's Is(err, CodeNamespaceNotFound) says the same without building an error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && e != nil && t != nil && e.Group == t.Group && e.Code == t.Code
}

// Key returns "group.code", the form used in the x-rivet-error header and in close reasons.
func (e *Error) Key() string { return e.Group + "." + e.Code }

// Cause returns the error that caused e, or nil.
func (e *Error) Cause() error { return e.cause }

// WithCause returns a copy of e that wraps cause (for logs; clients never see it).
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// WithMeta returns a copy of e with metadata key k set to v, and the message re-rendered from
// the catalog template. e itself, and every other copy, is unchanged.
func (e *Error) WithMeta(k string, v any) *Error {
	c := *e
	c.Metadata = make(map[string]any, len(e.Metadata)+1)
	maps.Copy(c.Metadata, e.Metadata)
	c.Metadata[k] = v
	if ent, ok := Lookup(e.Group, e.Code); ok {
		c.Message = ent.render(c.Metadata)
	}
	return &c
}

// wire is the JSON shape of an error, in Rivet's field order.
type wire struct {
	Group    string         `json:"group"`
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// MarshalJSON encodes e as {"group","code","message","metadata"?}: metadata is omitted when
// empty, the cause is never included. A metadata value JSON cannot encode is sent as its
// fmt.Sprint text instead of failing. (json.Marshal re-escapes <, > and & in the result; write
// JSON() itself to send exactly the bytes the Rivet engine would.)
func (e *Error) MarshalJSON() ([]byte, error) { return e.JSON(), nil }

// JSON returns the body MarshalJSON describes, without a trailing newline and with no HTML
// escaping (so "<" stays "<", as the Rivet engine sends it).
func (e *Error) JSON() []byte {
	w := wire{e.Group, e.Code, e.Message, e.Metadata}
	b, err := encode(w)
	if err != nil {
		safe := make(map[string]any, len(e.Metadata))
		for k, v := range e.Metadata {
			if _, err := encode(v); err != nil {
				v = fmt.Sprint(v)
			}
			safe[k] = v
		}
		w.Metadata = safe
		if b, err = encode(w); err != nil { // unreachable: every value is now encodable
			w.Metadata = nil
			b, _ = encode(w)
		}
	}
	return b
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// As returns the first *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) && e != nil {
		return e, true
	}
	return nil, false
}

// Is reports whether err's first *Error (see As) is the catalog code c. It compares group and
// code, so an error received from a peer (Parse) matches too.
func Is(err error, c Code) bool {
	e, ok := As(err)
	ent := c.entry()
	return ok && ent != nil && e.Group == ent.Group && e.Code == ent.Code
}

// CodeOf returns the catalog code of err's first *Error, for a switch over codes; the zero Code
// for an error without one, or whose group.code this node's catalog lacks.
func CodeOf(err error) Code {
	if e, ok := As(err); ok {
		return index[e.Group+"."+e.Code]
	}
	return 0
}

// Key returns "group.code" of err's first *Error, "core.internal_error" for an error outside
// the catalog, and "" for nil.
func Key(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Key()
	}
	return CodeCoreInternalError.Key()
}

// HTTPStatus returns the HTTP status for err: its *Error's Status, or 500 for an error outside
// the catalog (or an *Error without a valid status), and 200 for nil.
func HTTPStatus(err error) int {
	if err == nil {
		return http.StatusOK
	}
	if e, ok := As(err); ok && e.Status >= 400 && e.Status <= 599 {
		return e.Status
	}
	return http.StatusInternalServerError
}

// Public returns what a client may see of err: its *Error unchanged, unless the catalog marks
// the code Internal (core.internal_error, api.internal_error, store.corrupt), in which case, as
// for an error outside the catalog, a plain core.internal_error with no metadata and no cause.
// Log err itself. Public(nil) is nil.
func Public(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := As(err); ok {
		if ent, known := Lookup(e.Group, e.Code); !known || !ent.Internal {
			return e
		}
	}
	return coreInternalError("")
}
