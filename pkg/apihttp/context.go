package apihttp

import (
	"context"
	"log/slog"
)

type ctxKey int

const (
	keyRayID ctxKey = iota
	keyLogger
	keyToken
)

// RayID returns the ray id of the request ctx belongs to, or "" outside a request. It is also
// sent to the client in the x-rivet-ray-id header.
func RayID(ctx context.Context) string {
	s, _ := ctx.Value(keyRayID).(string)
	return s
}

// Logger returns the request's logger, which carries its ray_id, or slog.Default() outside a
// request.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(keyLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// Token returns the bearer token the request presented, if any. The peer client forwards it.
func Token(ctx context.Context) (string, bool) {
	s, ok := ctx.Value(keyToken).(string)
	return s, ok
}

// WithToken returns ctx carrying token as the presented bearer token (for calls made outside an
// HTTP request, and tests).
func WithToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, keyToken, token)
}

func withRequest(ctx context.Context, rayID string, log *slog.Logger) context.Context {
	ctx = context.WithValue(ctx, keyRayID, rayID)
	return context.WithValue(ctx, keyLogger, log.With("ray_id", rayID))
}

// WithoutToken returns ctx without the token a request presented, so that the peer client
// sends its own (the admin token): for the engine's own calls between datacenters made while
// it serves a request, which a scoped token could not make.
func WithoutToken(ctx context.Context) context.Context {
	return context.WithValue(ctx, keyToken, nil)
}
