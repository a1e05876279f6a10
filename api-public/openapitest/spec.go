package openapitest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// modulePath is the module whose root holds api-public/openapi.yaml.
const modulePath = "github.com/berthhq/berth"

// specRel is the contract's path relative to the module root.
const specRel = "api-public/openapi.yaml"

// SpecPath returns the path of api-public/openapi.yaml. It looks next to this package's source
// (../openapi.yaml), then in the root of the berth module found by walking up from the working
// directory (for builds with -trimpath, where the source path is not a file path).
func SpecPath() (string, error) {
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		p := filepath.Join(filepath.Dir(file), "..", "openapi.yaml")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("openapitest: finding %s: %w", specRel, err)
	}
	for {
		if isModuleRoot(dir) {
			p := filepath.Join(dir, filepath.FromSlash(specRel))
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("openapitest: %w", err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("openapitest: %s not found: no %s module root above the working directory", specRel, modulePath)
		}
		dir = parent
	}
}

// isModuleRoot reports whether dir holds the go.mod of modulePath.
func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "module "); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`) == modulePath
		}
	}
	return false
}

type contract struct {
	doc    *openapi3.T
	router routers.Router
}

// load reads, resolves and validates the contract once per process.
var load = sync.OnceValues(func() (*contract, error) {
	path, err := SpecPath()
	if err != nil {
		return nil, err
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("openapitest: loading %s: %w", path, err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("openapitest: %s is not a valid OpenAPI document: %w", path, err)
	}
	// Route on paths only: the servers list names localhost:6420, and tests run anywhere.
	doc.Servers = openapi3.Servers{{URL: "/"}}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("openapitest: routing %s: %w", path, err)
	}
	return &contract{doc: doc, router: router}, nil
})

// Spec returns the parsed and validated contract. Callers must not modify it.
func Spec() (*openapi3.T, error) {
	c, err := load()
	if err != nil {
		return nil, err
	}
	return c.doc, nil
}

// Operation is one documented method and path.
type Operation struct {
	Method string // "GET"
	Path   string // the path template, "/runner-configs/{runner_name}"
	ID     string // the operationId, "runner_configs_upsert"
	// Pending is the x-berth-pending value: the work that will serve this operation, or "" for
	// an operation berth serves now.
	Pending string
}

func (o Operation) String() string { return o.Method + " " + o.Path }

// Operations lists every operation of the contract, ordered by path and method. A server test
// can compare it with the routes it registers.
func Operations() ([]Operation, error) {
	doc, err := Spec()
	if err != nil {
		return nil, err
	}
	var ops []Operation
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			o := Operation{Method: method, Path: path, ID: op.OperationID}
			if v, ok := op.Extensions["x-berth-pending"]; ok {
				s, isString := v.(string)
				if !isString || s == "" {
					return nil, errors.New("openapitest: " + o.String() + ": x-berth-pending must be a non-empty string")
				}
				o.Pending = s
			}
			ops = append(ops, o)
		}
	}
	slices.SortFunc(ops, func(a, b Operation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return ops, nil
}
