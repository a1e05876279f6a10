package telemetry

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthhq/berth/engine/config"
)

func TestNewLogger(t *testing.T) {
	for _, tc := range []struct {
		cfg   config.Log
		debug bool // a debug line is written
		json  bool
		err   bool
	}{
		{config.Log{}, false, false, false},
		{config.Log{Format: "json", Level: "debug"}, true, true, false},
		{config.Log{Format: "text", Level: "warn"}, false, false, false},
		{config.Log{Format: "xml"}, false, false, true},
		{config.Log{Level: "loud"}, false, false, true},
	} {
		var b bytes.Buffer
		log, err := NewLogger(&b, tc.cfg)
		if (err != nil) != tc.err {
			t.Fatalf("%+v: err %v", tc.cfg, err)
		}
		if err != nil {
			continue
		}
		log.Debug("dbg", "ray_id", "r1")
		log.Error("boom", "ray_id", "r2")
		out := b.String()
		if strings.Contains(out, "dbg") != tc.debug || !strings.Contains(out, "r2") {
			t.Errorf("%+v: %q", tc.cfg, out)
		}
		var m map[string]any
		if isJSON := json.Unmarshal([]byte(strings.Split(out, "\n")[0]), &m) == nil; isJSON != tc.json {
			t.Errorf("%+v: JSON %v: %q", tc.cfg, isJSON, out)
		}
	}
}

func TestRequestID(t *testing.T) {
	if got := requestID("abc-123.x_y:z"); got != "abc-123.x_y:z" {
		t.Errorf("a usable id was replaced: %q", got)
	}
	for _, bad := range []string{"", "has space", "new\nline", strings.Repeat("a", 129)} {
		if got := requestID(bad); got == bad || got == "" || strings.ContainsFunc(got, badIDRune) {
			t.Errorf("requestID(%q) = %q", bad, got)
		}
	}
}

func TestTracingOffIsNoop(t *testing.T) {
	tr, err := NewTracing(TracingOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if tr.Enabled || tr.Tracer == nil {
		t.Fatalf("tracing without endpoint: enabled %v", tr.Enabled)
	}
	if _, s := tr.Tracer.Start(t.Context(), "x"); s.IsRecording() {
		t.Fatal("the no-op tracer records")
	}
	if _, err := NewTracing(TracingOptions{Endpoint: "::bad"}); err == nil {
		t.Fatal("a bad endpoint was accepted")
	}
}
