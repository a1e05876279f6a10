package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// docs/config.md must be what configdoc writes from the code as it is now.
func TestConfigDocUpToDate(t *testing.T) {
	want, err := markdown("..")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("docs/config.md is stale: run `go generate ./engine/config/configdoc` and commit the result")
	}
}

// Every key has a type, a description and its environment variable; comments shared by a
// group of fields reach each of them.
func TestConfigDocContent(t *testing.T) {
	b, err := markdown("..")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, want := range []string{
		"## guard\n",
		"| `guard.port` | integer 0–65535 | `6420` | `BERTH__guard__port` | Port to listen on; default 6420.",
		"| `topology.datacenters.<name>.peer_url` | string | — | `BERTH__topology__datacenters__<name>__peer_url` | PeerURL is where",
		"| `auth.admin_token` | string | unset |",
		// RateLimitInFlight has no comment of its own: it shares RateLimitRequests'.
		"| `guard.rate_limit_in_flight` | integer 0–4294967295 | `2000` | `BERTH__guard__rate_limit_in_flight` | RateLimitRequests bounds",
		"| `database.url` | string | `\"file://data/berth\"` |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs lack %q", want)
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "| `") && strings.HasSuffix(line, "|  |") {
			t.Errorf("key without a description: %s", line)
		}
	}
}
