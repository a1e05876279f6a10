package runner

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/berthhq/berth/pkg/rerr"
)

// ErrStopped is returned by calls on a runner that has stopped, or was shut down before it
// connected.
var ErrStopped = errors.New("runner: stopped")

// CloseError is how the engine ended the socket: the WebSocket close code and the parsed
// reason "group.code#ray_id". It unwraps to a *rerr.Error with the group and code, so
//
//	rerr.Is(err, rerr.CodeWSEviction)
//
// matches it.
type CloseError struct {
	CloseCode int    // e.g. 1011
	Reason    string // as received
	Group     string // e.g. "ws"; "" when the reason is not group.code
	Code      string // e.g. "going_away"
	RayID     string // the engine's ray id, for its logs; may be ""
}

func (e *CloseError) Error() string {
	return fmt.Sprintf("runner: socket closed by the engine: %d %q", e.CloseCode, e.Reason)
}

// Unwrap returns the reason's group and code as a *rerr.Error, or nil.
func (e *CloseError) Unwrap() error {
	if e.Group == "" {
		return nil
	}
	return &rerr.Error{Group: e.Group, Code: e.Code, Message: e.Reason}
}

// Evicted reports whether the engine told the runner not to come back (ws.eviction).
func (e *CloseError) Evicted() bool { return rerr.Is(e, rerr.CodeWSEviction) }

// Retryable reports whether the runner reconnects after this close: always, but for eviction.
func (e *CloseError) Retryable() bool { return !e.Evicted() }

// parseCloseReason splits "group.code#ray_id" as the reference client's
// parseWebSocketCloseReason does.
func parseCloseReason(code int, reason string) *CloseError {
	e := &CloseError{CloseCode: code, Reason: reason}
	key, ray, _ := strings.Cut(reason, "#")
	if g, c, ok := strings.Cut(key, "."); ok && g != "" && c != "" && !strings.ContainsAny(key, " \t") {
		e.Group, e.Code, e.RayID = g, c, ray
	}
	return e
}

// HandshakeError is an HTTP answer other than 101 to the socket's upgrade request, such as
// 403 api.forbidden for a wrong token. It unwraps to the engine's *rerr.Error when the body
// was one.
type HandshakeError struct {
	Status int         // HTTP status
	Err    *rerr.Error // the error body, or nil
	cause  error       // the library's error
}

func (e *HandshakeError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("runner: engine refused the socket: %d %s: %s", e.Status, e.Err.Key(), e.Err.Message)
	}
	return fmt.Sprintf("runner: engine refused the socket: %d %s: %v", e.Status, http.StatusText(e.Status), e.cause)
}

func (e *HandshakeError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.cause
}

// Retryable reports whether the same request may succeed later: a 408, 429 or 5xx answer.
func (e *HandshakeError) Retryable() bool {
	return e.Status == http.StatusRequestTimeout || e.Status == http.StatusTooManyRequests || e.Status >= 500
}

// ProtocolError is a frame from the engine the runner cannot follow, such as a first frame
// that is not ToClientInit.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "runner: protocol error: " + e.Msg }

// fatalAtStart reports whether err, met before the first init, means no later attempt can
// succeed either: the engine refused the request itself (bad token, unknown namespace, a
// protocol version it does not speak). Start returns such errors instead of retrying.
func fatalAtStart(err error) bool {
	var he *HandshakeError
	if errors.As(err, &he) {
		return !he.Retryable()
	}
	var ce *CloseError
	if errors.As(err, &ce) {
		switch rerr.CodeOf(ce) {
		case rerr.CodeWSEviction, rerr.CodeWSInvalidURL, rerr.CodeWSInvalidPacket, rerr.CodeWSInvalidInitialPacket,
			rerr.CodeWSInvalidRequest, rerr.CodeWSNoRunnerConfig, rerr.CodeNamespaceNotFound,
			rerr.CodeAPIBadRequest, rerr.CodeAPIForbidden, rerr.CodeAPIUnauthorized, rerr.CodeGuardMissingHeader:
			return true
		}
	}
	var pe *ProtocolError
	return errors.As(err, &pe)
}
