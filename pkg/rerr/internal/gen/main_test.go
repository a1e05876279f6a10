package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestGeneratedIsCurrent fails while pkg/rerr/catalog_gen.go is not what catalog.yaml
// generates: after editing catalog.yaml (or this generator), run go generate ./pkg/rerr.
func TestGeneratedIsCurrent(t *testing.T) {
	src, err := os.ReadFile("../../catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want, err := generate(src)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../catalog_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("pkg/rerr/catalog_gen.go is stale: run go generate ./pkg/rerr")
	}
}

func TestRejects(t *testing.T) {
	const ok = "- group: g\n  codes:\n  - code: c\n    status: 400\n    message: m\n"
	if _, err := generate([]byte(ok)); err != nil {
		t.Fatalf("a minimal catalog: %v", err)
	}
	for _, tt := range []struct{ name, yaml, want string }{
		{"unknown field", ok + "    stauts: 1\n", "stauts"},
		{"bad group", strings.Replace(ok, "group: g", "group: G", 1), "not a token"},
		{"bad code", strings.Replace(ok, "code: c", "code: c-d", 1), "not a token"},
		{"twice", ok + "  - code: c\n    status: 400\n    message: m\n", "listed twice"},
		{"same identifier", ok + "- group: g_c\n  codes:\n  - code: x\n    status: 400\n    message: m\n" +
			"- group: g\n  codes:\n  - code: c_x\n    status: 400\n    message: m\n", "identifier"},
		{"status", strings.Replace(ok, "400", "200", 1), "not an HTTP error status"},
		{"empty message", strings.Replace(ok, "message: m", "message: ''", 1), "empty or padded"},
		{"placeholder in message", strings.Replace(ok, "message: m", "message: '{x}'", 1), "placeholders"},
		{"placeholder not in meta", ok + "    detail: '{x}'\n", "not in meta"},
		{"stray brace", ok + "    detail: '{X}'\n", "brace"},
		{"close", ok + "    close: 1011\n", "close code"},
		{"custom", ok + "    custom: lower\n", "exported"},
		{"meta syntax", ok + "    meta: [x]\n", "key type"},
		{"meta flag", ok + "    meta: [x string optional]\n", "key type"},
		{"meta type", ok + "    meta: [x error]\n", "type error"},
		{"meta key", ok + "    meta: [X string]\n", "not a token"},
		{"meta twice", ok + "    meta: [x string, x int]\n", "taken"},
		{"meta keyword", ok + "    meta: [type string]\n", "keyword"},
		{"no groups", "[]\n", "no groups"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := generate([]byte(tt.yaml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("generate = %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestCamel(t *testing.T) {
	for _, tt := range []struct{ tok, exported, unexported string }{
		{"actor", "Actor", "actor"},
		{"too_many_actor_ids", "TooManyActorIDs", "tooManyActorIDs"},
		{"api_bad_request", "APIBadRequest", "apiBadRequest"},
		{"websocket_open_timeout", "WebSocketOpenTimeout", "websocketOpenTimeout"},
		{"elapsed_ms", "ElapsedMS", "elapsedMS"},
		{"head_txid", "HeadTxID", "headTxID"},
	} {
		if got := camel(tt.tok, true); got != tt.exported {
			t.Errorf("camel(%q, true) = %q, want %q", tt.tok, got, tt.exported)
		}
		if got := camel(tt.tok, false); got != tt.unexported {
			t.Errorf("camel(%q, false) = %q, want %q", tt.tok, got, tt.unexported)
		}
	}
}

func TestOptionalConstructor(t *testing.T) {
	src := "- group: g\n  codes:\n  - code: c\n    status: 400\n    message: m\n    detail: '{a} {b}'\n" +
		"    meta: [a string, b any omitempty, n int omitempty]\n"
	out, err := generate([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"func GC(a string, b any, n int) *Error {",
		`md["a"] = a`,
		"if b != nil {\n\t\tmd[\"b\"] = b",
		"if n != 0 {\n\t\tmd[\"n\"] = n",
		`Optional: []string{"b", "n"},`,
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}
