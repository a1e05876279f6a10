package config

import (
	"strings"
	"testing"
)

func TestValidateNodeAndPubSub(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // "" for valid
	}{
		{"single node", func(c *Config) {}, ""},
		{"nats over postgres", func(c *Config) {
			c.PubSub.URL, c.Database.URL = "nats://127.0.0.1:4222", "postgres://u@h/db"
		}, ""},
		{"nats over a file store", func(c *Config) { c.PubSub.URL = "nats://127.0.0.1:4222" }, "pubsub.url: several nodes share one store"},
		{"not nats", func(c *Config) {
			c.PubSub.URL, c.Database.URL = "redis://h:1", "postgres://u@h/db"
		}, "pubsub.url: invalid URL"},
		{"bad address", func(c *Config) { c.Node.Address = "tcp://h:1" }, "node.address: invalid URL"},
		{"short lease", func(c *Config) { c.Node.LeaseMs = 10 }, "node.lease_ms: must be at least 1000"},
		{"spaced id", func(c *Config) { c.Node.ID = "a b" }, "node.id: must not contain spaces"},
		{"no heap floor", func(c *Config) { c.Node.GCHeapFloorMiB = 0 }, ""},
		{"huge heap floor", func(c *Config) { c.Node.GCHeapFloorMiB = 16385 }, "node.gc_heap_floor_mib: must be at most 16384"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.set(c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestShutdownKeysAndAliases: node.releases and node.shutdown_drain_ms come from the schema
// or from their older environment names, the BERTH__ form winning; bad values name the
// variable they came from.
func TestShutdownKeysAndAliases(t *testing.T) {
	for _, tc := range []struct {
		env      []string
		releases uint32
		drainMs  uint32
		err      string
	}{
		{env: nil, releases: 128, drainMs: 25000},
		{env: []string{"PATH=/bin", "BERTH_RELEASES=4", "BERTH_SHUTDOWN_DRAIN_MS=1500"}, releases: 4, drainMs: 1500},
		{env: []string{"BERTH_RELEASES=4", "BERTH__node__releases=9"}, releases: 9, drainMs: 25000},
		{env: []string{"BERTH__node__shutdown_drain_ms=700"}, releases: 128, drainMs: 700},
		{env: []string{"BERTH_RELEASES=0"}, err: "node.releases: must be greater than zero, not 0"},
		{env: []string{"BERTH_RELEASES="}, err: "env BERTH_RELEASES"},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=-5"}, err: "env BERTH_SHUTDOWN_DRAIN_MS"},
		{env: []string{"BERTH_SHUTDOWN_DRAIN_MS=25s"}, err: "env BERTH_SHUTDOWN_DRAIN_MS"},
		{env: []string{"BERTH_RELEASES=99999999999"}, err: "env BERTH_RELEASES"},
	} {
		c, err := Load(Sources{Environ: tc.env})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.env, err, tc.err)
			}
			continue
		}
		if err != nil || c.Node.Releases != tc.releases || c.Node.ShutdownDrainMs != tc.drainMs {
			t.Errorf("%q: %+v %v, want %d releases, %d ms", tc.env, c.Node, err, tc.releases, tc.drainMs)
		}
	}
}
