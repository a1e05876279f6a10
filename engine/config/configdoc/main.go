// Command configdoc writes docs/config.md, the reference of every configuration key, from
// the config package itself: the keys and types of config.Config (json tags), the defaults of
// config.Default(), and the doc comments of the fields, read from the package's source.
//
//	go generate ./engine/config/configdoc
//
// A test fails when docs/config.md differs from what this would write.
package main

//go:generate go run . -src .. -out ../../../docs/config.md

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/berthhq/berth/engine/config"
)

func main() {
	src := flag.String("src", "..", "the directory of package engine/config")
	out := flag.String("out", "../../../docs/config.md", "the file to write")
	flag.Parse()
	b, err := markdown(*src)
	if err == nil {
		err = os.WriteFile(*out, b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "configdoc:", err)
		os.Exit(1)
	}
}

// docs holds the doc comments of the config package: by type name, and by type and field.
type docs struct {
	types    map[string]string
	fields   map[string]map[string]string
	validate string // the doc comment of (*Config).Validate: the rules across keys
}

// readDocs parses the package's non-test files in dir. A field without a comment of its own
// shares the comment of the field before it (one comment over a group of fields).
func readDocs(dir string) (docs, error) {
	d := docs{types: map[string]string{}, fields: map[string]map[string]string{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return d, err
	}
	sort.Strings(files)
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return d, err
		}
		for _, decl := range f.Decls {
			if fd, ok := decl.(*ast.FuncDecl); ok && fd.Name.Name == "Validate" && fd.Recv != nil {
				d.validate = fd.Doc.Text()
			}
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, spec := range gd.Specs {
				ts := spec.(*ast.TypeSpec)
				st, ok := ts.Type.(*ast.StructType)
				if !ok {
					continue
				}
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				d.types[ts.Name.Name] = doc.Text()
				fields := map[string]string{}
				prev := ""
				for _, f := range st.Fields.List {
					text := f.Doc.Text()
					if text == "" {
						text = prev
					}
					for _, n := range f.Names {
						fields[n.Name] = text
					}
					prev = text
				}
				d.fields[ts.Name.Name] = fields
			}
		}
	}
	return d, nil
}

// key is one row of a section's table.
type key struct {
	path []string // json names; "<name>" stands for a map key
	typ  string
	def  string
	doc  string

	section bool // a mapping of names to sections, not set by itself
}

// markdown renders the reference.
func markdown(srcDir string) ([]byte, error) {
	d, err := readDocs(srcDir)
	if err != nil {
		return nil, err
	}
	def := reflect.ValueOf(config.Default()).Elem()
	t := def.Type()
	var b bytes.Buffer
	b.WriteString(header)
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		if f.Type.Kind() != reflect.Struct {
			return nil, fmt.Errorf("top-level field %s is not a section", f.Name)
		}
		fmt.Fprintf(&b, "\n## %s\n\n", name)
		if doc := oneParagraph(d.types[f.Type.Name()]); doc != "" {
			fmt.Fprintf(&b, "%s\n\n", doc)
		}
		var keys []key
		if err := walk(d, []string{name}, f.Type, def.Field(i), &keys); err != nil {
			return nil, err
		}
		b.WriteString("| key | type | default | environment variable | description |\n|---|---|---|---|---|\n")
		for _, k := range keys {
			env := "`BERTH__" + strings.Join(k.path, "__") + "`"
			if k.section {
				env = "—"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", strings.Join(k.path, "."), k.typ, k.def, env, cell(k.doc))
		}
	}
	if rules := rulesOf(d.validate); rules != "" {
		fmt.Fprintf(&b, "\n## Rules across keys\n\n%s\n", rules)
	}
	return b.Bytes(), nil
}

// walk lists the keys of struct type t under path; v holds their defaults (invalid: none).
func walk(d docs, path []string, t reflect.Type, v reflect.Value, out *[]key) error {
	for i := range t.NumField() {
		f := t.Field(i)
		name := jsonName(f)
		if name == "" {
			continue
		}
		p := append(append([]string(nil), path...), name)
		doc := d.fields[t.Name()][f.Name]
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(i)
		}
		switch f.Type.Kind() {
		case reflect.Struct:
			if err := walk(d, p, f.Type, fv, out); err != nil {
				return err
			}
			continue
		case reflect.Map:
			if f.Type.Key().Kind() != reflect.String || f.Type.Elem().Kind() != reflect.Struct {
				return fmt.Errorf("%s: only maps of names to sections are supported", strings.Join(p, "."))
			}
			*out = append(*out, key{path: p, typ: "mapping of names to sections", def: "see description", doc: doc, section: true})
			if err := walk(d, append(p, "<name>"), f.Type.Elem(), reflect.Value{}, out); err != nil {
				return err
			}
			continue
		}
		typ, err := typeName(f.Type)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Join(p, "."), err)
		}
		*out = append(*out, key{path: p, typ: typ, def: defaultOf(fv), doc: doc})
	}
	return nil
}

func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

func typeName(t reflect.Type) (string, error) {
	switch t.Kind() {
	case reflect.String:
		return "string", nil
	case reflect.Bool:
		return "boolean", nil
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("integer 0–%d", uint64(1<<t.Bits()-1)), nil
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "list of strings", nil
		}
	}
	return "", fmt.Errorf("no documentation for Go type %s", t)
}

func defaultOf(v reflect.Value) string {
	if !v.IsValid() {
		return "—"
	}
	switch v.Kind() {
	case reflect.String:
		if v.String() == "" {
			return "unset"
		}
		return "`" + strconv.Quote(v.String()) + "`"
	case reflect.Bool:
		return "`" + strconv.FormatBool(v.Bool()) + "`"
	case reflect.Slice:
		if v.Len() == 0 {
			return "empty"
		}
		return "`" + fmt.Sprint(v.Interface()) + "`"
	}
	return "`" + strconv.FormatUint(v.Uint(), 10) + "`"
}

// rulesOf keeps the paragraph of Validate's comment that starts "Rules:".
func rulesOf(comment string) string {
	for _, para := range strings.Split(comment, "\n\n") {
		if rest, ok := strings.CutPrefix(para, "Rules: "); ok {
			return "Besides each key's type, a configuration must pass these checks: " + oneParagraph(rest)
		}
	}
	return ""
}

// oneParagraph joins a comment's lines into one line.
func oneParagraph(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell makes a comment fit in a table cell.
func cell(s string) string { return strings.ReplaceAll(oneParagraph(s), "|", `\|`) }

const header = `# Configuration

<!-- Generated by engine/config/configdoc from engine/config; do not edit.
     Regenerate with: go generate ./engine/config/configdoc -->

berth has one configuration schema. ` + "`berth start`" + ` builds it from, in order (later wins):

1. the defaults below;
2. each ` + "`--config FILE`" + ` in the order given: JSON (` + "`.json`" + `) or YAML (` + "`.yaml`" + `, ` + "`.yml`" + `);
   mappings merge key by key, any other value is replaced by the later file's;
3. environment variables ` + "`BERTH__section__key`" + ` (two underscores between parts, names as
   below: ` + "`BERTH__guard__port=7420`" + `, ` + "`BERTH__topology__datacenters__eu__peer_url=...`" + `); the
   value is text, read as the key's type;
4. the flags ` + "`--listen host:port`" + ` (guard.host and guard.port), ` + "`--peer-listen host:port`" + `
   (api_peer.host and api_peer.port), ` + "`--metrics-listen host:port`" + ` (metrics.host and
   metrics.port), ` + "`--db URL`" + ` (database.url) and ` + "`--log-level`" + ` (log.level).

An unknown key, a value of the wrong type and a value that breaks a rule are errors that
name the key and where it was set (` + "`berth.yaml:7:14`" + `, ` + "`env BERTH__guard__port`" + `); the
engine does not start until every one is fixed. ` + "`berth config validate`" + ` checks a
configuration without starting, and ` + "`berth config print`" + ` shows the effective one with secrets
masked. Both take the same ` + "`--config`" + `, ` + "`--listen`" + `, ` + "`--peer-listen`" + `, ` + "`--metrics-listen`" + ` and ` + "`--db`" + ` flags as ` + "`berth start`" + `.
A listener whose address is taken stops the start with a message naming the listener, its flag
and its key.

Times are in milliseconds. An example file:

` + "```yaml" + `
auth:
  admin_token: change-me
guard:
  port: 6420
database:
  url: postgres://berth:secret@db.internal:5432/berth
topology:
  datacenter_label: 1
  datacenters:
    eu:
      datacenter_label: 1
      is_leader: true
      public_url: https://eu.example.com
      peer_url: http://eu.internal:6421
` + "```" + `
`
