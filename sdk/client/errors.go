package client

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// APIError is an error response from the engine: its HTTP status and the JSON error body
// {group, code, message, metadata?}. Match on Group and Code, never on Message:
//
//	var apiErr *client.APIError
//	if errors.As(err, &apiErr) && apiErr.Group == "namespace" && apiErr.Code == "not_found" { ... }
//
// or with errors.Is and a template holding only a group and code:
//
//	errors.Is(err, &client.APIError{Group: "namespace", Code: "not_found"})
type APIError struct {
	Status   int            // the HTTP status
	Group    string         // e.g. "namespace"; "" when the body was not a berth error
	Code     string         // e.g. "not_found"
	Message  string         // for humans; the raw body when it was not a berth error
	Metadata map[string]any // the code's fields, if any
	RayID    string         // the x-rivet-ray-id response header, for the engine's logs
}

// Error returns "berth: 404 namespace.not_found: The namespace does not exist.".
func (e *APIError) Error() string {
	if e.Group == "" && e.Code == "" {
		return fmt.Sprintf("berth: %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	}
	return fmt.Sprintf("berth: %d %s.%s: %s", e.Status, e.Group, e.Code, e.Message)
}

// Is reports whether target is an *APIError with the same group and code.
func (e *APIError) Is(target error) bool {
	t, ok := target.(*APIError)
	return ok && t != nil && e.Group == t.Group && e.Code == t.Code
}

// Retryable reports whether the same request may succeed later without changes: the engine
// or a datacenter it needed was unavailable, overloaded or too slow (408, 429, 502, 503, 504).
// Whether retrying a write is safe is the caller's call.
func (e *APIError) Retryable() bool {
	switch e.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}

// DecodeError reads and closes resp's body and returns it as an *APIError: for error
// responses of the low-level client (Client.Raw).
func DecodeError(resp *http.Response) error {
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	return errorFrom(resp, body)
}

func errorFrom(resp *http.Response, body []byte) *APIError {
	e := &APIError{Status: resp.StatusCode, RayID: resp.Header.Get("x-rivet-ray-id")}
	var w struct {
		Group    string         `json:"group"`
		Code     string         `json:"code"`
		Message  string         `json:"message"`
		Metadata map[string]any `json:"metadata"`
	}
	if json.Unmarshal(body, &w) == nil && w.Group != "" && w.Code != "" {
		e.Group, e.Code, e.Message, e.Metadata = w.Group, w.Code, w.Message, w.Metadata
		return e
	}
	// Not a berth error (a proxy in between, say): keep the start of the body.
	const max = 512
	if len(body) > max {
		body = body[:max]
		for len(body) > 0 && !utf8.Valid(body) {
			body = body[:len(body)-1]
		}
	}
	e.Message = string(body)
	return e
}
