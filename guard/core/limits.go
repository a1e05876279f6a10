package core

// Size limits of the gateway (rivet-engine.md §5.8).
const (
	// MaxRequestBody bounds an HTTP request body (http_max_request_body_size): a larger one
	// is 413 guard.request_body_too_large.
	MaxRequestBody = 20 << 20
	// MaxWebSocketMessage bounds a client's WebSocket message and frame.
	MaxWebSocketMessage = 32 << 20
)
