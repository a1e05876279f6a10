// Command gen writes pkg/rerr/catalog_gen.go from pkg/rerr/catalog.yaml: the catalog table,
// a Code constant per code for matching, and a constructor per code taking the code's
// metadata as parameters, so that a misspelt code or metadata key does not compile.
//
//	go generate ./pkg/rerr
//
// catalog.yaml's header describes its fields. A test fails when catalog_gen.go differs from
// what this would write.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/format"
	"go/token"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/berthhq/berth/pkg/rerr/internal/tmpl"
)

func main() {
	in := flag.String("in", "catalog.yaml", "the catalog")
	out := flag.String("out", "catalog_gen.go", "the file to write")
	flag.Parse()
	data, err := os.ReadFile(*in)
	if err == nil {
		data, err = generate(data)
	}
	if err == nil {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rerr/internal/gen:", err)
		os.Exit(1)
	}
}

// group and code are catalog.yaml's shape.
type group struct {
	Group string `yaml:"group"`
	Doc   string `yaml:"doc"`
	Codes []code `yaml:"codes"`
}

type code struct {
	Code     string   `yaml:"code"`
	Doc      string   `yaml:"doc"`
	Status   int      `yaml:"status"`
	Message  string   `yaml:"message"`
	Detail   string   `yaml:"detail"`
	Meta     []string `yaml:"meta"`
	Close    int      `yaml:"close"`
	Internal bool     `yaml:"internal"`
	Custom   string   `yaml:"custom"`

	group  string
	params []param
}

// param is one metadata key of a code, as its constructor's parameter.
type param struct {
	key, name, typ string
	optional       bool
}

// zero is the comparison that tells a present value of each allowed type from its zero value.
var zero = map[string]string{
	"any": " != nil", "string": ` != ""`, "bool": "",
	"int": " != 0", "int64": " != 0", "uint16": " != 0", "uint32": " != 0", "uint64": " != 0", "float64": " != 0",
}

// closeCodes are the close codes an entry may set (0, the default, means 1011).
var closeCodes = []int{1000, 1002, 1008, 1009}

// parse decodes and checks the catalog.
func parse(src []byte) ([]group, error) {
	var groups []group
	d := yaml.NewDecoder(bytes.NewReader(src))
	d.KnownFields(true)
	if err := d.Decode(&groups); err != nil {
		return nil, fmt.Errorf("catalog.yaml: %w", err)
	}
	seen := map[string]bool{}
	idents := map[string]string{}
	var errs []error
	fail := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	for gi := range groups {
		g := &groups[gi]
		if !tmpl.IsToken(g.Group) {
			fail(g.Group, "the group is not a token (a-z, 0-9, _)")
		}
		if len(g.Codes) == 0 {
			fail(g.Group, "the group has no codes")
		}
		for ci := range g.Codes {
			c := &g.Codes[ci]
			c.group = g.Group
			key := c.key()
			if !tmpl.IsToken(c.Code) {
				fail(key, "the code is not a token (a-z, 0-9, _)")
			}
			if seen[key] {
				fail(key, "listed twice")
			}
			seen[key] = true
			for _, id := range []string{c.constName(), c.funcName()} {
				if other, dup := idents[id]; dup {
					fail(key, "its identifier %s is also %s's", id, other)
				}
				idents[id] = key
			}
			if c.Status < 400 || c.Status > 599 || http.StatusText(c.Status) == "" {
				fail(key, "status %d is not an HTTP error status", c.Status)
			}
			if c.Message == "" || c.Message != strings.TrimSpace(c.Message) {
				fail(key, "the message %q is empty or padded", c.Message)
			}
			if p := tmpl.Placeholders(c.Message); len(p) > 0 {
				fail(key, "the plain message has placeholders %v; put them in detail", p)
			}
			if c.Close != 0 && !slices.Contains(closeCodes, c.Close) {
				fail(key, "close code %d is not one of %v", c.Close, closeCodes)
			}
			if c.Custom != "" && (!token.IsIdentifier(c.Custom) || !token.IsExported(c.Custom)) {
				fail(key, "custom %q is not an exported Go identifier", c.Custom)
			}
			names := map[string]bool{"md": true} // the constructors' local
			for _, m := range c.Meta {
				p, err := parseParam(m)
				if err != nil {
					fail(key, "meta %q: %v", m, err)
					continue
				}
				if names[p.name] || slices.ContainsFunc(c.params, func(q param) bool { return q.key == p.key }) {
					fail(key, "meta %q: the key or its parameter name %s is taken", m, p.name)
				}
				names[p.name] = true
				c.params = append(c.params, p)
			}
			for _, ph := range tmpl.Placeholders(c.Detail) {
				if !slices.ContainsFunc(c.params, func(p param) bool { return p.key == ph }) {
					fail(key, "placeholder {%s} of detail is not in meta", ph)
				}
			}
			if strings.Count(c.Detail, "{") != len(tmpl.Placeholders(c.Detail)) {
				fail(key, "detail %q has a brace that is not a placeholder", c.Detail)
			}
		}
	}
	if len(groups) == 0 {
		errs = append(errs, errors.New("catalog.yaml lists no groups"))
	}
	return groups, errors.Join(errs...)
}

// parseParam parses a meta entry "key type" or "key type omitempty".
func parseParam(s string) (param, error) {
	f := strings.Fields(s)
	optional := len(f) == 3 && f[2] == "omitempty"
	if len(f) != 2 && !optional {
		return param{}, errors.New(`want "key type" or "key type omitempty"`)
	}
	p := param{key: f[0], typ: f[1], optional: optional}
	if !tmpl.IsToken(p.key) {
		return param{}, errors.New("the key is not a token (a-z, 0-9, _)")
	}
	if _, ok := zero[p.typ]; !ok {
		return param{}, fmt.Errorf("type %s is not one of any, string, bool, int, int64, uint16, uint32, uint64, float64", p.typ)
	}
	p.name = camel(p.key, false)
	if token.IsKeyword(p.name) || p.name == "any" || p.name == "string" || p.name == "map" || p.name == "nil" {
		return param{}, fmt.Errorf("its parameter name %s is a Go keyword or a name the constructor uses", p.name)
	}
	return p, nil
}

func (c *code) key() string { return c.group + "." + c.Code }

// constName is the code's constant, e.g. CodeActorNotFound.
func (c *code) constName() string { return "Code" + c.funcName() }

// funcName is the code's exported constructor, e.g. ActorNotFound.
func (c *code) funcName() string { return camel(c.group, true) + camel(c.Code, true) }

// ctorName is the generated constructor: funcName, or unexported when a custom one builds the
// code.
func (c *code) ctorName() string {
	n := c.funcName()
	if c.Custom == "" {
		return n
	}
	// Lower the leading initialism too: APIBadRequest -> apiBadRequest.
	return camel(c.group, false) + camel(c.Code, true)
}

// words spelled other than by capitalizing their first letter.
var initialisms = map[string]string{
	"api": "API", "sqlite": "SQLite", "cbor": "CBOR", "http": "HTTP", "id": "ID", "ids": "IDs", "kv": "KV", "ms": "MS",
	"txid": "TxID", "uri": "URI", "url": "URL", "websocket": "WebSocket", "ws": "WS",
}

// camel turns a token into a Go identifier: actor_not_found -> ActorNotFound (exported) or
// actorNotFound.
func camel(tok string, exported bool) string {
	var b strings.Builder
	for i, w := range strings.Split(tok, "_") {
		switch {
		case w == "":
		case i == 0 && !exported:
			b.WriteString(w)
		case initialisms[w] != "":
			b.WriteString(initialisms[w])
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// generate returns catalog_gen.go for the catalog src.
func generate(src []byte) ([]byte, error) {
	groups, err := parse(src)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("// Code generated by pkg/rerr/internal/gen from catalog.yaml; DO NOT EDIT.\n\n")
	p("package rerr\n\n")

	p("// The catalog's codes, in catalog.yaml's order. Match an error with Is(err, CodeActorNotFound)\n")
	p("// or by switching on CodeOf(err).\n")
	p("const (\n_ Code = iota\n")
	for _, g := range groups {
		p("\n// %s\n", g.Group)
		for _, c := range g.Codes {
			p("\n")
			build := c.Custom
			if build == "" {
				build = c.funcName()
			}
			comment(&b, "\t", fmt.Sprintf("%s is %s (%d). %s Build it with %s.", c.constName(), c.key(), c.Status, sentence(c.Doc), build))
			p("%s\n", c.constName())
		}
	}
	p(")\n\n")

	p("// catalog is catalog.yaml as a table: catalog[c-1] is the entry of Code c.\n")
	p("var catalog = []Entry{\n")
	for _, g := range groups {
		p("// %s\n", g.Group)
		if g.Doc != "" {
			comment(&b, "\t", g.Doc)
		}
		for _, c := range g.Codes {
			p("{\nGroup: %q, Code: %q, Status: %d,\n", g.Group, c.Code, c.Status)
			p("Message: %s,\n", strconv.Quote(c.Message))
			if c.Detail != "" {
				p("Detail: %s,\n", strconv.Quote(c.Detail))
			}
			var keys, optional []string
			for _, prm := range c.params {
				keys = append(keys, strconv.Quote(prm.key))
				if prm.optional {
					optional = append(optional, strconv.Quote(prm.key))
				}
			}
			if len(keys) > 0 {
				p("Meta: []string{%s},\n", strings.Join(keys, ", "))
			}
			if len(optional) > 0 {
				p("Optional: []string{%s},\n", strings.Join(optional, ", "))
			}
			if c.Close != 0 {
				p("Close: %d,\n", c.Close)
			}
			if c.Internal {
				p("Internal: true,\n")
			}
			p("},\n")
		}
	}
	p("}\n")

	var custom []string
	for _, g := range groups {
		for _, c := range g.Codes {
			p("\n")
			ctor(&b, &c)
			if c.Custom != "" {
				custom = append(custom, c.Custom)
			}
		}
	}
	if len(custom) > 0 {
		p("\n// The hand-written constructors catalog.yaml names (custom) must exist.\nvar (\n")
		for _, n := range custom {
			p("_ = %s\n", n)
		}
		p(")\n")
	}
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("formatting the output: %w\n%s", err, b.Bytes())
	}
	return out, nil
}

// ctor writes the constructor of c.
func ctor(b *bytes.Buffer, c *code) {
	text := c.Message
	if c.Detail != "" {
		text = c.Detail
	}
	doc := fmt.Sprintf("%s builds %s (%d). %s", c.ctorName(), c.key(), c.Status, sentence(c.Doc))
	var opt []string
	for _, p := range c.params {
		if p.optional {
			opt = append(opt, p.name)
		}
	}
	if len(opt) > 0 {
		doc += fmt.Sprintf(" A zero %s leaves its key out.", strings.Join(opt, " or "))
	}
	if c.Custom != "" {
		doc += fmt.Sprintf(" %s builds it for callers.", c.Custom)
	}
	comment(b, "", doc)
	b.WriteString("//\n//\t" + text + "\n")
	fmt.Fprintf(b, "func %s(%s) *Error {\n", c.ctorName(), signature(c.params))
	switch {
	case len(c.params) == 0:
		fmt.Fprintf(b, "return newError(%s, nil)\n", c.constName())
	case len(opt) == 0:
		fmt.Fprintf(b, "return newError(%s, map[string]any{\n", c.constName())
		for _, p := range c.params {
			fmt.Fprintf(b, "%q: %s,\n", p.key, p.name)
		}
		fmt.Fprintf(b, "})\n")
	default:
		fmt.Fprintf(b, "md := make(map[string]any, %d)\n", len(c.params))
		for _, p := range c.params {
			if p.optional {
				cond := p.name + zero[p.typ]
				fmt.Fprintf(b, "if %s {\nmd[%q] = %s\n}\n", cond, p.key, p.name)
			} else {
				fmt.Fprintf(b, "md[%q] = %s\n", p.key, p.name)
			}
		}
		fmt.Fprintf(b, "return newError(%s, md)\n", c.constName())
	}
	fmt.Fprintf(b, "}\n")
}

// signature is the parameter list, with runs of one type sharing it: a, b string, n int.
func signature(ps []param) string {
	var parts []string
	for i, p := range ps {
		if i+1 < len(ps) && ps[i+1].typ == p.typ {
			parts = append(parts, p.name)
		} else {
			parts = append(parts, p.name+" "+p.typ)
		}
	}
	return strings.Join(parts, ", ")
}

// sentence returns s ending in a full stop, or "" for "".
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

// comment writes text as a // comment wrapped at about 100 columns.
func comment(b *bytes.Buffer, indent, text string) {
	line := indent + "//"
	for _, w := range strings.Fields(text) {
		if len(line)+1+len(w) > 100 && line != indent+"//" {
			b.WriteString(line + "\n")
			line = indent + "//"
		}
		line += " " + w
	}
	b.WriteString(line + "\n")
}
