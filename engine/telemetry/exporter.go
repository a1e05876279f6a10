package telemetry

import sdktrace "go.opentelemetry.io/otel/sdk/trace"

// SpanExporter receives finished spans (the OTel SDK's exporter interface).
type SpanExporter = sdktrace.SpanExporter
