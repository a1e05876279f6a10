package config

import (
	"strings"
	"testing"
)

func TestObservabilityKeys(t *testing.T) {
	for _, tc := range []struct {
		name    string
		mod     func(*Config)
		wantErr string // "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"empty means default", func(c *Config) { c.Log = Log{} }, ""},
		{"json debug", func(c *Config) { c.Log = Log{Format: "json", Level: "debug"} }, ""},
		{"bad format", func(c *Config) { c.Log.Format = "xml" }, `log.format: "xml" is not one of text, json`},
		{"bad level", func(c *Config) { c.Log.Level = "loud" }, `log.level: "loud" is not one of debug, info, warn, error`},
		{"otel endpoint", func(c *Config) { c.OTel.Endpoint = "http://127.0.0.1:4318" }, ""},
		{"otel scheme", func(c *Config) { c.OTel.Endpoint = "grpc://collector:4317" }, "otel.endpoint"},
		{"otel no host", func(c *Config) { c.OTel.Endpoint = "http://" }, "otel.endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			tc.mod(c)
			err := c.Validate()
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Validate = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestObservabilityEnv(t *testing.T) {
	c, err := Load(Sources{Environ: []string{"BERTH__otel__endpoint=http://collector:4318", "BERTH__log__format=json"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.OTel.Endpoint != "http://collector:4318" || c.Log.Format != "json" || c.Log.Level != DefaultLogLevel {
		t.Fatalf("otel %+v log %+v", c.OTel, c.Log)
	}
}
