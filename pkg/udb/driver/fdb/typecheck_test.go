package fdb

import (
	"bytes"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const bindingModule = "github.com/apple/foundationdb/bindings/go"

// TestTypeCheckTagged type-checks the driver as built with -tags fdb, and
// the binding it calls, without the FoundationDB client: go/types fakes the
// cgo package C (FakeImportC), so every use of the binding's Go API is
// checked although the cgo build cannot run here. It keeps the tagged code
// from rotting on machines (like CI's) that cannot compile it.
func TestTypeCheckTagged(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the standard library from source; skipped with -short")
	}
	out, err := exec.Command("go", "mod", "download", "-json", bindingModule).Output()
	if err != nil {
		t.Skipf("cannot download %s to read its source: %v", bindingModule, err)
	}
	dirOut, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", bindingModule).Output()
	dir := strings.TrimSpace(string(dirOut))
	if err != nil || dir == "" {
		t.Fatalf("locating %s (go mod download said %s): %v", bindingModule, bytes.TrimSpace(out), err)
	}
	fset := token.NewFileSet()
	build.Default.CgoEnabled = false // the source importer reads the standard library without cgo
	src := importer.ForCompiler(fset, "source", nil).(types.ImporterFrom)
	imp := &fakeCImporter{fset: fset, src: src, pkgs: map[string]*types.Package{}}
	imp.local = map[string]string{bindingModule + "/src/fdb": filepath.Join(dir, "src", "fdb")}

	binding, errs := imp.check(t, bindingModule+"/src/fdb", imp.local[bindingModule+"/src/fdb"], nil, false)
	if len(errs) > 0 {
		t.Fatalf("the binding does not type-check with a fake C package:\n%s", strings.Join(errs, "\n"))
	}
	imp.pkgs[bindingModule+"/src/fdb"] = binding
	if _, errs := imp.check(t, "github.com/berthhq/berth/pkg/udb/driver/fdb", ".", []string{"fdb"}, true); len(errs) > 0 {
		t.Fatalf("the driver (with -tags fdb) does not type-check:\n%s", strings.Join(errs, "\n"))
	}
}

type fakeCImporter struct {
	fset  *token.FileSet
	src   types.ImporterFrom
	pkgs  map[string]*types.Package
	local map[string]string
}

func (i *fakeCImporter) Import(path string) (*types.Package, error) {
	return i.ImportFrom(path, "", 0)
}

func (i *fakeCImporter) ImportFrom(path, dir string, mode types.ImportMode) (*types.Package, error) {
	if p, ok := i.pkgs[path]; ok {
		return p, nil
	}
	return i.src.ImportFrom(path, dir, mode)
}

// check parses the package in dir as go build would with tags (and its
// in-package test files when tests is set) and type-checks it.
func (i *fakeCImporter) check(t *testing.T, path, dir string, tags []string, tests bool) (*types.Package, []string) {
	t.Helper()
	ctx := build.Default
	ctx.CgoEnabled = true // so that the cgo files are listed
	ctx.BuildTags = tags
	bp, err := ctx.ImportDir(dir, 0)
	if err != nil {
		t.Fatalf("listing %s: %v", dir, err)
	}
	names := append(append([]string{}, bp.GoFiles...), bp.CgoFiles...)
	if tests {
		names = append(names, bp.TestGoFiles...)
	}
	var files []*ast.File
	for _, n := range names {
		f, err := parser.ParseFile(i.fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var errs []string
	conf := types.Config{Importer: i, FakeImportC: true, Error: func(err error) { errs = append(errs, err.Error()) }}
	p, _ := conf.Check(path, i.fset, files, nil)
	if len(files) < 3 {
		errs = append(errs, "found only "+strings.Join(names, ", ")+" in "+dir)
	}
	return p, errs
}
