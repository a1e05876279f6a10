package rerr

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCloseReason(t *testing.T) {
	ray := "0123456789abcdefghijklmnopqrst" // a 30-character Rivet id
	long := strings.Repeat("r", 200)
	tests := []struct {
		name  string
		err   error
		ray   string
		want  string
		code  int
		limit bool // the result was cut
	}{
		{"eviction", WSEviction(), ray, "ws.eviction#" + ray, 1000, false},
		{"wrapped", fmt.Errorf("x: %w", NamespaceNotFound("a")), ray, "namespace.not_found#" + ray, 1011, false},
		{"outside the catalog", io.EOF, ray, "core.internal_error#" + ray, 1011, false},
		{"nil", nil, ray, "ws.connection_closed#" + ray, 1000, false},
		{"no ray", WSInvalidURL(), "", "ws.invalid_url", 1011, false},
		{"runner shutdown", PegboardRunnerShutdown(), "", "pegboard.runner_shutdown", 1000, false},
		{"index skip", WSMessageIndexSkip(), "", "ws.message_index_skip", 1008, false},
		{"long ray", WSGoingAway(), long, ("ws.going_away#" + long)[:123], 1011, true},
		// "é" is 2 bytes: "ws.timed_out#" is 13 bytes, so byte 123 falls inside the 56th é.
		{"multibyte at the limit", WSTimedOut(), strings.Repeat("é", 100), "ws.timed_out#" + strings.Repeat("é", 55), 1011, true},
		// "€" is 3 bytes.
		{"3-byte runes", WSTimedOut(), strings.Repeat("€", 60), "ws.timed_out#" + strings.Repeat("€", 36), 1011, true},
		{"invalid UTF-8 in ray", WSEviction(), "a\xffb", "ws.eviction#a\uFFFDb", 1000, false},
		{"remote code unknown here", &Error{Group: "future", Code: "thing"}, "r", "future.thing#r", 1011, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := CloseReason(tt.err, tt.ray)
			if got != tt.want {
				t.Fatalf("CloseReason = %q (%d bytes), want %q", got, len(got), tt.want)
			}
			if len(got) > MaxCloseReason || !utf8.ValidString(got) {
				t.Fatalf("%q: %d bytes or invalid UTF-8", got, len(got))
			}
			if tt.limit && len(got) < MaxCloseReason-3 {
				t.Fatalf("cut too short: %d bytes", len(got))
			}
			if c := CloseCode(tt.err); c != tt.code {
				t.Fatalf("CloseCode = %d, want %d", c, tt.code)
			}
		})
	}
}

func FuzzCloseReason(f *testing.F) {
	f.Add("ws", "eviction", "0123456789abcdefghijklmnopqrst")
	f.Add("namespace", "not_found", strings.Repeat("é", 80))
	f.Add("x\xff", "y", "\xe2\x82")
	f.Fuzz(func(t *testing.T, group, code, ray string) {
		got := CloseReason(&Error{Group: group, Code: code}, ray)
		if len(got) > MaxCloseReason || !utf8.ValidString(got) {
			t.Fatalf("CloseReason(%q, %q, %q) = %q: %d bytes or invalid UTF-8", group, code, ray, got, len(got))
		}
		full := strings.ToValidUTF8(group+"."+code+"#"+ray, "\uFFFD")
		if ray == "" {
			full = strings.ToValidUTF8(group+"."+code, "\uFFFD")
		}
		if !strings.HasPrefix(full, got) || len(full) > MaxCloseReason && len(got) < MaxCloseReason-3 {
			t.Fatalf("CloseReason = %q is not the longest valid prefix of %q", got, full)
		}
	})
}
