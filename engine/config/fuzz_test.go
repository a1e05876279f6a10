package config

import (
	"testing"
)

// FuzzParse feeds arbitrary files and environment values through parsing, merging, decoding
// and validation: never a panic, and a Config only when it validates.
func FuzzParse(f *testing.F) {
	f.Add([]byte(twoDCYAML), true, "6420")
	f.Add([]byte(`{"guard":{"port":1},"topology":{"datacenters":{"a":{"datacenter_label":1}}}}`), false, "x")
	f.Add([]byte("a: &x [*x]"), true, "")
	f.Fuzz(func(t *testing.T, data []byte, yaml bool, envPort string) {
		var root *node
		var err error
		if yaml {
			root, err = parseYAML("f.yaml", data)
		} else {
			root, err = parseJSON("f.json", data)
		}
		if err != nil {
			return
		}
		env, err := parseEnv([]string{"BERTH__guard__port=" + envPort})
		if err != nil {
			t.Fatal(err)
		}
		c, err := fromTree(merge(root, env))
		if err == nil {
			if verr := c.Validate(); verr != nil {
				t.Fatalf("fromTree returned a config that does not validate: %v", verr)
			}
		}
	})
}
