// Package telemetry sets up the engine's logs (log/slog, text or JSON), its OpenTelemetry
// tracing (OTLP/HTTP, off unless an endpoint is configured) and the outer HTTP layer that
// gives each request its id, span, access line and request metrics.
package telemetry
