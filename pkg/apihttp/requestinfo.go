package apihttp

import "context"

// HeaderRequestID is the request id: the client's x-request-id when it sent a usable one
// (echoed in the response and forwarded to actors), else one the engine made up for its logs.
const HeaderRequestID = "x-request-id"

// RequestInfo is what the handlers inside the engine's outermost layer tell it about a
// request, for its access log, metrics and span. The outer layer owns it; handlers of the
// same request set its fields (one goroutine at a time: the request's).
type RequestInfo struct {
	// ID is the request id (HeaderRequestID), set by the outer layer.
	ID string
	// Route names what served the request, with few distinct values: an API route pattern
	// ("/actors/:actor_id"), "gateway", "/runners/connect".
	Route string
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying ri.
func WithRequestInfo(ctx context.Context, ri *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

// RequestInfoFrom returns the request's RequestInfo, or nil outside the engine's outer layer.
func RequestInfoFrom(ctx context.Context) *RequestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri
}

// SetRoute records which route served the request; a no-op without a RequestInfo.
func SetRoute(ctx context.Context, route string) {
	if ri := RequestInfoFrom(ctx); ri != nil {
		ri.Route = route
	}
}

// RequestID returns the request id, or "" outside the engine's outer layer.
func RequestID(ctx context.Context) string {
	if ri := RequestInfoFrom(ctx); ri != nil {
		return ri.ID
	}
	return ""
}
