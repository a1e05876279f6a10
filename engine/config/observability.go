package config

import (
	"net/url"
	"strings"
)

// Log configures the engine's logs (log/slog).
type Log struct {
	// Format is "text" (key=value lines, the default) or "json" (one JSON object a line).
	Format string `json:"format"`
	// Level is the lowest level written: "debug", "info" (the default), "warn" or "error".
	// Request lines (method, path, route, status, ray_id, request_id) are written at debug.
	Level string `json:"level"`
}

// OTel configures OpenTelemetry tracing.
type OTel struct {
	// Endpoint is the base URL of an OTLP/HTTP collector (http://host:4318); spans are sent
	// to its /v1/traces. Unset (the default) turns tracing off, at no cost per request.
	Endpoint string `json:"endpoint,omitempty"`
}

// Log defaults and choices.
const (
	DefaultLogFormat = "text"
	DefaultLogLevel  = "info"
)

var (
	logFormats = []string{"text", "json"}
	logLevels  = []string{"debug", "info", "warn", "error"}
)

func (c *Config) validateObservability(bad badFunc) {
	oneOf := func(path, v string, choices []string) {
		if v == "" {
			return // the default
		}
		for _, ch := range choices {
			if v == ch {
				return
			}
		}
		bad(path, "%q is not one of %s", v, strings.Join(choices, ", "))
	}
	oneOf("log.format", c.Log.Format, logFormats)
	oneOf("log.level", c.Log.Level, logLevels)
	if raw := c.OTel.Endpoint; raw != "" {
		u, err := url.Parse(raw)
		switch {
		case err != nil:
			bad("otel.endpoint", "invalid URL %q", raw)
		case u.Scheme != "http" && u.Scheme != "https":
			bad("otel.endpoint", "invalid URL %q: the scheme must be http or https", raw)
		case u.Host == "":
			bad("otel.endpoint", "invalid URL %q: no host", raw)
		case u.RawQuery != "" || u.Fragment != "":
			bad("otel.endpoint", "invalid URL %q: no query or fragment allowed", raw)
		}
	}
}
