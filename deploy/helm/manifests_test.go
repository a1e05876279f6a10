package helm

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

//go:generate go test -run TestPlainManifests -update

// manifestsDir holds the plain manifests for kustomize users, one folder per values.yaml.
const manifestsDir = "../kubernetes"

var update = flag.Bool("update", false, "rewrite the plain manifests under deploy/kubernetes")

// TestPlainManifests checks each deploy/kubernetes/*/berth.yaml is the chart rendered with
// the values.yaml beside it (or, with -update, writes it).
func TestPlainManifests(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(manifestsDir, "*", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no deploy/kubernetes/*/values.yaml")
	}
	for _, values := range dirs {
		dir := filepath.Dir(values)
		r := renderFile(t, values)
		var b bytes.Buffer
		b.WriteString("# Generated from deploy/helm/berth with " + filepath.Base(dir) + "/values.yaml; do not edit.\n")
		b.WriteString("# Regenerate with: cd deploy/helm && go generate\n")
		for _, d := range r.docs {
			b.WriteString("---\n# Source: " + d.source + "\n")
			b.Write(bytes.TrimRight(d.yaml, "\n"))
			b.WriteString("\n")
		}
		file := filepath.Join(dir, "berth.yaml")
		if *update {
			if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v; run go generate in deploy/helm", err)
		}
		if !bytes.Equal(got, b.Bytes()) {
			t.Errorf("%s is stale: run go generate in deploy/helm", file)
		}
		k, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
		if err != nil || !bytes.Contains(k, []byte("- berth.yaml")) {
			t.Errorf("%s/kustomization.yaml does not list berth.yaml (%v)", dir, err)
		}
	}
}
