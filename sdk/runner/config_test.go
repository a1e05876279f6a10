package runner_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/sdk/runner"
)

func TestConfigErrors(t *testing.T) {
	ok := func() runner.Config {
		return runner.Config{Endpoint: "http://127.0.0.1:6420", Namespace: "default", Name: "pool", TotalSlots: 1}
	}
	for _, tc := range []struct {
		name   string
		edit   func(*runner.Config)
		fields []string // every field the error must name
	}{
		{"empty", func(c *runner.Config) { *c = runner.Config{} }, []string{"Endpoint", "Namespace", "Name", "TotalSlots"}},
		{"scheme", func(c *runner.Config) { c.Endpoint = "ftp://h" }, []string{"Endpoint"}},
		{"no host", func(c *runner.Config) { c.Endpoint = "http://" }, []string{"Endpoint"}},
		{"query", func(c *runner.Config) { c.Endpoint = "http://h/?x=1" }, []string{"Endpoint"}},
		{"user info", func(c *runner.Config) { c.Endpoint = "http://u:p@h" }, []string{"Endpoint"}},
		{"not a url", func(c *runner.Config) { c.Endpoint = "http://[::1" }, []string{"Endpoint"}},
		{"long name", func(c *runner.Config) { c.Name = strings.Repeat("n", runner.MaxNameLen+1) }, []string{"Name"}},
		{"bad utf8 name", func(c *runner.Config) { c.Name = "\xff" }, []string{"Name"}},
		{"long key", func(c *runner.Config) { c.Key = strings.Repeat("k", runner.MaxKeyLen+1) }, []string{"Key"}},
		{"envoy key", func(c *runner.Config) { c.Envoy, c.Key = true, "-bad key" }, []string{"Key"}},
		{"envoy short key", func(c *runner.Config) { c.Envoy, c.Key = true, "ab" }, []string{"Key"}},
		{"envoy protocol", func(c *runner.Config) { c.Envoy, c.Key, c.ProtocolVersion = true, "envoy-1", 6 }, []string{"ProtocolVersion"}},
		{"token", func(c *runner.Config) { c.Token = "has space" }, []string{"Token"}},
		{"metadata array", func(c *runner.Config) { c.Metadata = json.RawMessage(`[1]`) }, []string{"Metadata"}},
		{"metadata junk", func(c *runner.Config) { c.Metadata = json.RawMessage(`{`) }, []string{"Metadata"}},
		{"metadata null", func(c *runner.Config) { c.Metadata = json.RawMessage(`null`) }, []string{"Metadata"}},
		{"actor name metadata", func(c *runner.Config) {
			c.PrepopulateActorNames = map[string]json.RawMessage{"counter": json.RawMessage(`"x"`)}
		}, []string{`PrepopulateActorNames["counter"]`}},
		{"empty actor name", func(c *runner.Config) { c.PrepopulateActorNames = map[string]json.RawMessage{"": nil} }, []string{`PrepopulateActorNames[""]`}},
		{"long actor name", func(c *runner.Config) {
			c.PrepopulateActorNames = map[string]json.RawMessage{strings.Repeat("a", runner.MaxActorNameLen+1): nil}
		}, []string{"PrepopulateActorNames"}},
		{"too many actor names", func(c *runner.Config) {
			c.PrepopulateActorNames = map[string]json.RawMessage{}
			for i := range runner.MaxActorNames + 1 {
				c.PrepopulateActorNames[strconv.Itoa(i)] = nil
			}
		}, []string{"PrepopulateActorNames"}},
		{"actor names metadata in all", func(c *runner.Config) {
			big := json.RawMessage(`{"a":"` + strings.Repeat("x", runner.MaxMetadataLen/2) + `"}`)
			c.PrepopulateActorNames = map[string]json.RawMessage{"a": big, "b": big}
		}, []string{"PrepopulateActorNames"}},
		{"protocol", func(c *runner.Config) { c.ProtocolVersion = 4 }, []string{"ProtocolVersion"}},
		{"protocol high", func(c *runner.Config) { c.ProtocolVersion = 8 }, []string{"ProtocolVersion"}},
		{"negative timings", func(c *runner.Config) {
			c.BackoffInitial, c.PingTimeout, c.ShutdownTimeout, c.ShutdownPollInterval = -1, -1, -1, -1
			c.HandshakeTimeout, c.CommandAckInterval = -1, -1
		}, []string{"BackoffInitial", "PingTimeout", "ShutdownTimeout", "ShutdownPollInterval", "HandshakeTimeout", "CommandAckInterval"}},
		{"backoff order", func(c *runner.Config) { c.BackoffInitial, c.BackoffMax = time.Second, time.Millisecond }, []string{"BackoffMax"}},
		{"backoff max below default initial", func(c *runner.Config) { c.BackoffMax = time.Millisecond }, []string{"BackoffMax"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.edit(&cfg)
			r, err := runner.New(cfg)
			if err == nil {
				t.Fatalf("New accepted %+v", cfg)
			}
			if r != nil {
				t.Fatal("New returned a runner with an error")
			}
			var ce *runner.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("%v is not a *ConfigError", err)
			}
			for _, f := range tc.fields {
				// The field, or an entry of it: `config Name = ` or `config PrepopulateActorNames["a"] = `.
				if !strings.Contains(err.Error(), "config "+f+" = ") && !strings.Contains(err.Error(), "config "+f+"[") {
					t.Errorf("error does not name %s:\n%v", f, err)
				}
			}
			if n := strings.Count(err.Error(), "runner: config "); n != len(tc.fields) {
				t.Errorf("%d violations reported, want %d:\n%v", n, len(tc.fields), err)
			}
			if strings.Contains(err.Error(), "has space") {
				t.Errorf("the token leaks into the error: %v", err)
			}
		})
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg := runner.Config{Endpoint: "https://engine.example/", Namespace: "default", Name: "pool", TotalSlots: 1}
	a, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := runner.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !uuid.MatchString(a.Key()) || a.Key() == b.Key() {
		t.Fatalf("default keys %q, %q: want distinct random UUIDv4s", a.Key(), b.Key())
	}
	cfg.Key = "mine"
	c, err := runner.New(cfg)
	if err != nil || c.Key() != "mine" {
		t.Fatalf("Key %q, %v", c.Key(), err)
	}
	if a.State() != runner.StateNew || a.RunnerID() != "" {
		t.Fatalf("State %v, RunnerID %q", a.State(), a.RunnerID())
	}
}
