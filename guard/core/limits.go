package core

// Size limits of the gateway (docs/gateway.md, "Limits").
const (
	// MaxRequestBody bounds an HTTP request body sent in one message
	// (http_max_request_body_size): a larger one is 413 guard.invalid_request_body. Bodies
	// above StreamRequestBody are streamed instead, and this limit does not apply to them.
	MaxRequestBody = 20 << 20
	// StreamRequestBody is the size above which a request body is streamed to the actor in
	// chunks (ToClientRequestStart{stream: true}, then ToClientRequestChunk) instead of sent
	// in one message. A streamed body has no total limit: the gateway holds one chunk of it
	// at a time, plus the first StreamRequestBody bytes kept so that the request can still be
	// retried while nothing past them was read.
	StreamRequestBody = 1 << 20
	// BodyChunk is the largest body chunk the gateway sends (the envoy's maximum frame).
	BodyChunk = 64 << 10
	// MaxWebSocketMessage bounds a client's WebSocket message and frame.
	MaxWebSocketMessage = 32 << 20
)
