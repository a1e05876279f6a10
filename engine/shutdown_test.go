package engine

import (
	"strings"
	"testing"
	"time"
)

func TestShutdownSettingsFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		releases int
		drain    time.Duration
		err      string
	}{
		{env: nil, releases: 128, drain: 25 * time.Second},
		{env: []string{"PATH=/bin", "BERTH_RELEASES=4", "BERTH_SHUTDOWN_DRAIN_MS=1500"}, releases: 4, drain: 1500 * time.Millisecond},
		{env: []string{"BERTH_RELEASES=0"}, err: "BERTH_RELEASES must be greater than zero, not 0"},
		{env: []string{"BERTH_RELEASES="}, err: `BERTH_RELEASES has invalid value ""`},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=-5"}, err: `BERTH_SHUTDOWN_DRAIN_MS has invalid value "-5"`},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=25s"}, err: `BERTH_SHUTDOWN_DRAIN_MS has invalid value "25s"`},
		{env: []string{"BERTH_RELEASES= 8"}, err: `BERTH_RELEASES has invalid value " 8"`},
		{env: []string{"BERTH_RELEASES=99999999999"}, err: `BERTH_RELEASES has invalid value "99999999999"`},
	} {
		s, err := ShutdownSettingsFromEnv(tc.env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || s.Releases != tc.releases || s.DrainTimeout != tc.drain {
			t.Errorf("%q: %+v %v, want %d releases, %v", tc.env, s, err, tc.releases, tc.drain)
		}
	}
}
