package baregen

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Run runs the baregen command line in dir: flags, then the schema files, each as N=file for
// protocol version N (or a lone file for an unversioned schema). It returns the output path
// (relative to dir) and the generated source; the command writes it there.
func Run(dir string, args []string) (out string, src []byte, err error) {
	fs := flag.NewFlagSet("baregen", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	pkg := fs.String("package", "", "Go package name of the output (required)")
	fs.StringVar(&out, "o", "", "output file (required)")
	bareImport := fs.String("bare", DefaultBareImport, "import path of the BARE runtime")
	if err := fs.Parse(args); err != nil {
		return "", nil, fmt.Errorf("baregen: %v\n%s", err, usage)
	}
	if *pkg == "" || out == "" || fs.NArg() == 0 {
		return "", nil, errors.New("baregen: -package, -o and a schema are required\n" + usage)
	}
	cfg := Config{Package: *pkg, BareImport: *bareImport}
	for _, a := range fs.Args() {
		var s Source
		s.File = a
		if v, f, ok := strings.Cut(a, "="); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n <= 0 {
				return "", nil, fmt.Errorf("baregen: %q: want N=file with N a protocol version", a)
			}
			s.Version, s.File = n, f
		}
		text, err := os.ReadFile(filepath.Join(dir, s.File))
		if err != nil {
			return "", nil, fmt.Errorf("baregen: %v", err)
		}
		s.Text = string(text)
		cfg.Sources = append(cfg.Sources, s)
	}
	src, err = Generate(cfg)
	return out, src, err
}

const usage = `usage: baregen -package name -o file.go [-bare importpath] schema.bare
       baregen -package name -o file.go [-bare importpath] 1=v1.bare 2=v2.bare …`

// CheckGenerated finds the //go:generate line of the Go package in dir that runs baregen,
// runs it in memory and reports an error if the output file differs from what it generates
// (a schema or the generator changed, and go generate was not run).
func CheckGenerated(dir string) error {
	args, err := generateArgs(dir)
	if err != nil {
		return err
	}
	out, want, err := Run(dir, args)
	if err != nil {
		return err
	}
	got, err := os.ReadFile(filepath.Join(dir, out))
	if err != nil {
		return err
	}
	if !bytes.Equal(got, want) {
		gl, wl := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
		line := 0
		for line < len(gl) && line < len(wl) && bytes.Equal(gl[line], wl[line]) {
			line++
		}
		return fmt.Errorf("%s is stale (it first differs on line %d): run go generate in %s", out, line+1, filepath.Clean(dir))
	}
	return nil
}

// generateArgs returns the arguments of the one "//go:generate go run …baregen…" line of the
// package in dir.
func generateArgs(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var found []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		for _, l := range strings.Split(string(b), "\n") {
			fields := strings.Fields(l)
			if len(fields) > 3 && fields[0] == "//go:generate" && fields[1] == "go" && fields[2] == "run" && strings.HasSuffix(fields[3], "baregen") {
				if found != nil {
					return nil, fmt.Errorf("%s: more than one baregen //go:generate line", dir)
				}
				found = fields[4:]
			}
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%s: no //go:generate go run …/baregen line", dir)
	}
	return found, nil
}
