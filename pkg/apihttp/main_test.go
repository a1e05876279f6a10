package apihttp

import (
	"io"
	"log/slog"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil))) // fan-out warnings
	goleak.VerifyTestMain(m)
}
