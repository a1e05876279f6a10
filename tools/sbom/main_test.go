package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// goBuild builds the main package pkg into dir/name, static and with -trimpath as a release.
func goBuild(t *testing.T, dir, name, pkg string) string {
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-trimpath", "-o", bin, pkg)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// The command, built, run on a built binary with dependencies (the example runner: the SDK,
// a module of this repository that go.mod replaces, and modules from the proxy), writes an
// SPDX 2.3 document that lists the binary with its checksum and version, the standard
// library and every module Go recorded in it.
func TestSBOMOfBuiltBinary(t *testing.T) {
	dir := t.TempDir()
	tool := goBuild(t, dir, "sbom", ".")
	bin := goBuild(t, dir, "counter", "../../examples/counter")
	run := exec.Command(tool, "-out", dir, "-version", "v9.8.7", bin+":counter-v9.8.7-test")
	run.Env = append(os.Environ(), "SOURCE_DATE_EPOCH=1700000000")
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("sbom: %v\n%s", err, out)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "counter-v9.8.7-test.spdx.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc Document
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(bin)
	sum := sha256.Sum256(b)

	if doc.SPDXVersion != "SPDX-2.3" || doc.DataLicense != "CC0-1.0" || doc.SPDXID != "SPDXRef-DOCUMENT" || doc.Name != "counter-v9.8.7-test" {
		t.Errorf("header: %+v", doc)
	}
	if doc.CreationInfo.Created != "2023-11-14T22:13:20Z" {
		t.Errorf("created %q, want SOURCE_DATE_EPOCH's 2023-11-14T22:13:20Z", doc.CreationInfo.Created)
	}
	if !strings.HasSuffix(doc.DocumentNamespace, hex.EncodeToString(sum[:])) {
		t.Errorf("namespace %q does not end with the binary's digest", doc.DocumentNamespace)
	}
	if len(info.Deps) < 2 {
		t.Fatalf("the example runner records %d modules; the test wants a binary with dependencies", len(info.Deps))
	}
	if len(doc.Packages) != len(info.Deps)+2 {
		t.Fatalf("%d packages, want the binary, stdlib and %d modules", len(doc.Packages), len(info.Deps))
	}
	// Go records the main module's version from the VCS in a clean checkout (a pseudo-version
	// in CI's fresh clone), "(devel)" in a modified one; -version stands in for the latter.
	wantVersion := info.Main.Version
	if wantVersion == "(devel)" || wantVersion == "" {
		wantVersion = "v9.8.7"
	}
	root := doc.Packages[0]
	if root.Name != "github.com/berthhq/berth" || root.VersionInfo != wantVersion || root.PrimaryPurpose != "APPLICATION" ||
		len(root.Checksums) != 1 || root.Checksums[0].Value != hex.EncodeToString(sum[:]) {
		t.Errorf("binary's package: %+v", root)
	}
	if std := doc.Packages[1]; std.Name != "stdlib" || std.VersionInfo != info.GoVersion {
		t.Errorf("stdlib package: %+v, want version %s", std, info.GoVersion)
	}
	ids := map[string]bool{}
	idOK := regexp.MustCompile(`^SPDXRef-[A-Za-z0-9.-]+$`)
	byName := map[string]Package{}
	for _, p := range doc.Packages {
		if !idOK.MatchString(p.SPDXID) || ids[p.SPDXID] {
			t.Errorf("SPDXID %q is malformed or repeated", p.SPDXID)
		}
		ids[p.SPDXID] = true
		byName[p.Name] = p
	}
	for _, d := range info.Deps {
		p, ok := byName[d.Path]
		if !ok || p.VersionInfo != d.Version {
			t.Errorf("module %s %s: %+v", d.Path, d.Version, p)
			continue
		}
		if want := "pkg:golang/" + d.Path + "@" + d.Version; len(p.ExternalRefs) != 1 || p.ExternalRefs[0].Locator != want {
			t.Errorf("module %s: refs %+v, want %s", d.Path, p.ExternalRefs, want)
		}
		if d.Sum != "" && len(p.Checksums) != 1 {
			t.Errorf("module %s: checksum of %s missing", d.Path, d.Sum)
		}
	}
	describes, depends := 0, 0
	for _, r := range doc.Relationships {
		if !ids[r.Related] || (r.Element != "SPDXRef-DOCUMENT" && !ids[r.Element]) {
			t.Errorf("relationship to an unknown element: %+v", r)
		}
		switch r.Type {
		case "DESCRIBES":
			describes++
		case "DEPENDS_ON":
			depends++
		}
	}
	if describes != 1 || depends != len(doc.Packages)-1 {
		t.Errorf("%d DESCRIBES and %d DEPENDS_ON, want 1 and %d", describes, depends, len(doc.Packages)-1)
	}

	// A file that is no Go binary is an error, not an empty document.
	notGo := filepath.Join(dir, "notgo")
	if err := os.WriteFile(notGo, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(tool, "-out", dir, notGo).CombinedOutput(); err == nil || !strings.Contains(string(out), "no Go build information") {
		t.Errorf("sbom on a shell script: %v, %q", err, out)
	}
}
