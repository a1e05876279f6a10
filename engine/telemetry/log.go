package telemetry

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/berthhq/berth/engine/config"
)

// NewLogger returns a logger writing to w in c's format ("text" or "json"; "" is text) at
// c's level and above ("" is info).
func NewLogger(w io.Writer, c config.Log) (*slog.Logger, error) {
	var level slog.Level
	switch c.Level {
	case "", "info":
		level = slog.LevelInfo
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	default:
		return nil, fmt.Errorf("log.level: %q is not one of debug, info, warn, error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("log.format: %q is not one of text, json", c.Format)
}
