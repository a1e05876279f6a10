package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func generate(t *testing.T) []byte {
	t.Helper()
	spec, err := os.ReadFile("../openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := markdown(spec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// docs/api.md must be what apidoc writes from the contract as it is now.
func TestAPIDocUpToDate(t *testing.T) {
	got, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, generate(t)) {
		t.Fatal("docs/api.md is stale: run `go generate ./api-public/apidoc` and commit the result")
	}
}

func TestAPIDocContent(t *testing.T) {
	doc := string(generate(t))
	for _, want := range []string{
		"| [`POST /runners/{runner_id}/drain`](#post-runnersrunner_iddrain) | Drain a runner. |",
		"\n### POST /runners/{runner_id}/drain\n",
		"| `runner_id` | path | ",
		"| `namespace` | query | string | yes | The namespace, by name. |",
		"| 200 | The runner as the drain left it. | [RunnersDrainResponse](#runnersdrainresponse) |",
		"\n### Actor\n",
		"| `crash_policy` | [CrashPolicy](#crashpolicy) | yes |",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("docs/api.md lacks %q", want)
		}
	}
	if _, err := markdown([]byte("openapi: 3.0.3\ninfo: {title: x}\npaths: {/a: {get: {responses: {}}}}\n")); err == nil {
		t.Error("an invalid spec gave no error")
	}
}
