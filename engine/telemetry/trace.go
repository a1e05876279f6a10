package telemetry

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// TracerName names the engine's tracer (the instrumentation scope of its spans).
const TracerName = "github.com/berthhq/berth"

// Tracing is the engine's tracer. Without an endpoint it is a no-op tracer and Enabled is
// false: callers skip extracting and injecting trace context, so a request pays nothing.
type Tracing struct {
	// Tracer starts spans; never nil.
	Tracer trace.Tracer
	// Propagator reads and writes W3C traceparent/tracestate.
	Propagator propagation.TextMapPropagator
	// Enabled reports whether spans are recorded and exported.
	Enabled bool

	provider *sdktrace.TracerProvider // nil when disabled
}

// TracingOptions configures NewTracing.
type TracingOptions struct {
	// Endpoint is the OTLP/HTTP collector's base URL (config otel.endpoint); spans go to
	// its /v1/traces. Empty turns tracing off unless Exporter is set.
	Endpoint string
	// Exporter, when set, receives the spans instead of an OTLP exporter (tests).
	Exporter sdktrace.SpanExporter
	// Service and Version describe this process in every span's resource.
	Service, Version string
	// BatchTimeout bounds how long a finished span waits before export (5 s).
	BatchTimeout time.Duration
}

// NewTracing returns the engine's tracing: a batching OTLP/HTTP exporter to o.Endpoint,
// or the no-op tracer when there is none.
func NewTracing(o TracingOptions) (*Tracing, error) {
	prop := propagation.TraceContext{}
	if o.Endpoint == "" && o.Exporter == nil {
		return &Tracing{Tracer: noop.NewTracerProvider().Tracer(TracerName), Propagator: prop}, nil
	}
	exp := o.Exporter
	if exp == nil {
		u, err := url.Parse(o.Endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("otel.endpoint: invalid URL %q", o.Endpoint)
		}
		// WithEndpointURL takes the full path; the collector's traces path is /v1/traces.
		u.Path = singleSlashJoin(u.Path, "/v1/traces")
		exp, err = otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(u.String()))
		if err != nil {
			return nil, fmt.Errorf("otel: exporter for %s: %w", o.Endpoint, err)
		}
	}
	if o.Service == "" {
		o.Service = "berth"
	}
	if o.BatchTimeout <= 0 {
		o.BatchTimeout = 5 * time.Second
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", o.Service),
		attribute.String("service.version", o.Version),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(o.BatchTimeout)),
		sdktrace.WithResource(res),
	)
	return &Tracing{Tracer: tp.Tracer(TracerName), Propagator: prop, Enabled: true, provider: tp}, nil
}

// Shutdown exports the spans still buffered and stops the exporter, until ctx ends.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.provider == nil {
		return nil
	}
	return t.provider.Shutdown(ctx)
}

func singleSlashJoin(a, b string) string {
	for len(a) > 0 && a[len(a)-1] == '/' {
		a = a[:len(a)-1]
	}
	return a + b
}
