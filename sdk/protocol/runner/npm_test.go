package runner

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
)

// TestNpmVectors runs tests/npm/runner-vectors.mjs, which encodes messages with the official
// @rivetkit/engine-runner-protocol (pinned in tests/npm/package-lock.json), and checks that each
// frame decodes in Go as the same top-level message and re-encodes byte for byte. It needs the
// node packages: npm install --prefix tests/npm.
func TestNpmVectors(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "tests", "npm")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@rivetkit", "engine-runner-protocol")); err != nil {
		t.Skip("tests/npm/node_modules is missing: run `npm install --prefix tests/npm` to check the npm vectors")
	}
	cmd := exec.Command("node", "runner-vectors.mjs")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node runner-vectors.mjs: %v", err)
	}
	var vectors []struct {
		Name string
		Dir  string
		Hex  string
		JSON struct {
			Tag string
		}
	}
	if err := json.Unmarshal(out, &vectors); err != nil {
		t.Fatalf("runner-vectors.mjs output: %v", err)
	}
	if len(vectors) < 40 {
		t.Fatalf("only %d vectors", len(vectors))
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) {
			in, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			var m any
			var re []byte
			switch v.Dir {
			case "ToServer":
				var d ToServer
				if d, err = DecodeToServer(in, Version7); err == nil {
					m = d
					re, err = EncodeToServer(d, Version7)
				}
			case "ToClient":
				var d ToClient
				if d, err = DecodeToClient(in, Version7); err == nil {
					m = d
					re, err = EncodeToClient(d, Version7)
				}
			case "ToServerlessServer":
				var d ToServerlessServerInit
				var ver int
				if d, ver, err = DecodeServerlessInit(in); err == nil {
					m = d
					re, err = EncodeServerlessInit(d, ver)
				}
			default:
				t.Fatalf("unknown dir %q", v.Dir)
			}
			if err != nil {
				t.Fatalf("%x: %v", in, err)
			}
			if name := reflect.TypeOf(m).Name(); name != v.JSON.Tag {
				t.Errorf("decoded as %s, node encoded %s", name, v.JSON.Tag)
			}
			if !bytes.Equal(re, in) {
				t.Errorf("re-encoded %x\nnode       %x", re, in)
			}
		})
	}
}
