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
