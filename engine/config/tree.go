package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// A node is one value of the merged configuration tree, before it is decoded into a Config.
// Files, environment variables and flags each become a tree; trees merge in order.
type node struct {
	kind nodeKind
	m    map[string]*node // kindMap
	keys []string         // kindMap, in source order
	list []*node          // kindList
	text string           // kindScalar: the value's text
	typ  scalarType       // kindScalar
	src  string           // where the value came from: "berth.yaml:3:7", "env BERTH__guard__port"
}

type nodeKind uint8

const (
	kindNull nodeKind = iota
	kindMap
	kindList
	kindScalar
)

// scalarType says how a scalar was written. Files give typed scalars; environment variables
// and flags give untyped text, parsed according to the field it lands in.
type scalarType uint8

const (
	typString scalarType = iota
	typNumber
	typBool
	typText // untyped: env or flag
)

func newMap(src string) *node { return &node{kind: kindMap, m: map[string]*node{}, src: src} }

func (n *node) describe() string {
	switch n.kind {
	case kindNull:
		return "null"
	case kindMap:
		return "a mapping"
	case kindList:
		return "a list"
	}
	switch n.typ {
	case typString:
		return fmt.Sprintf("string %q", n.text)
	case typNumber:
		return "number " + n.text
	case typBool:
		return "boolean " + n.text
	}
	return strconv.Quote(n.text)
}

// set stores v at key, keeping the key order.
func (n *node) set(key string, v *node) {
	if _, ok := n.m[key]; !ok {
		n.keys = append(n.keys, key)
	}
	n.m[key] = v
}

// lookup returns the node at path, or nil.
func (n *node) lookup(path ...string) *node {
	for _, p := range path {
		if n == nil || n.kind != kindMap {
			return nil
		}
		n = n.m[p]
	}
	return n
}

// merge folds src into dst: mappings merge key by key, anything else is replaced by src.
func merge(dst, src *node) *node {
	if dst == nil || dst.kind != kindMap || src.kind != kindMap {
		return src
	}
	for _, k := range src.keys {
		dst.set(k, merge(dst.m[k], src.m[k]))
	}
	return dst
}

// setPath stores an untyped text value at path, creating mappings on the way. A scalar in the
// way is replaced: the later source wins, as in merge.
func setPath(root *node, path []string, text, src string) {
	n := root
	for _, p := range path[:len(path)-1] {
		next := n.m[p]
		if next == nil || next.kind != kindMap {
			next = newMap(src)
			n.set(p, next)
		}
		n = next
	}
	n.set(path[len(path)-1], &node{kind: kindScalar, text: text, typ: typText, src: src})
}

// parseYAML turns a YAML document into a tree. An empty document is an empty mapping.
func parseYAML(name string, data []byte) (*node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if doc.Kind == 0 { // empty input
		return newMap(name), nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode {
		if len(root.Content) == 0 {
			return newMap(name), nil
		}
		root = root.Content[0]
	}
	budget := maxNodes
	return fromYAML(name, root, 0, &budget)
}

// maxNodes bounds the values of one file after YAML aliases are expanded, so that a file of
// aliases to aliases cannot make the engine build an enormous tree.
const maxNodes = 100_000

func fromYAML(name string, y *yaml.Node, depth int, budget *int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%s:%d:%d: nested too deeply", name, y.Line, y.Column)
	}
	if *budget--; *budget < 0 {
		return nil, fmt.Errorf("%s:%d:%d: more than %d values (after expanding aliases)", name, y.Line, y.Column, maxNodes)
	}
	src := fmt.Sprintf("%s:%d:%d", name, y.Line, y.Column)
	switch y.Kind {
	case yaml.AliasNode:
		return fromYAML(name, y.Alias, depth+1, budget)
	case yaml.MappingNode:
		n := newMap(src)
		for i := 0; i+1 < len(y.Content); i += 2 {
			k, v := y.Content[i], y.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return nil, fmt.Errorf("%s:%d:%d: a key must be a plain value", name, k.Line, k.Column)
			}
			if _, dup := n.m[k.Value]; dup {
				return nil, fmt.Errorf("%s:%d:%d: key %q given twice", name, k.Line, k.Column, k.Value)
			}
			c, err := fromYAML(name, v, depth+1, budget)
			if err != nil {
				return nil, err
			}
			n.set(k.Value, c)
		}
		return n, nil
	case yaml.SequenceNode:
		n := &node{kind: kindList, src: src}
		for _, e := range y.Content {
			c, err := fromYAML(name, e, depth+1, budget)
			if err != nil {
				return nil, err
			}
			n.list = append(n.list, c)
		}
		return n, nil
	case yaml.ScalarNode:
		switch y.ShortTag() {
		case "!!null":
			return &node{kind: kindNull, src: src}, nil
		case "!!int", "!!float":
			return &node{kind: kindScalar, typ: typNumber, text: y.Value, src: src}, nil
		case "!!bool":
			var b bool
			if err := y.Decode(&b); err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			return &node{kind: kindScalar, typ: typBool, text: strconv.FormatBool(b), src: src}, nil
		}
		return &node{kind: kindScalar, typ: typString, text: y.Value, src: src}, nil
	}
	return nil, fmt.Errorf("%s: unsupported YAML node", src)
}

// parseJSON turns a JSON document into a tree, rejecting duplicate keys and trailing data.
func parseJSON(name string, data []byte) (*node, error) {
	p := &jsonParser{name: name, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: data after the top-level value", p.pos())
	}
	return n, nil
}

type jsonParser struct {
	name string
	data []byte
	dec  *json.Decoder
}

// pos is the line:column just after the last token read.
func (p *jsonParser) pos() string {
	off := int(p.dec.InputOffset())
	off = min(off, len(p.data))
	line := 1 + bytes.Count(p.data[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(p.data[:off], '\n')
	return fmt.Sprintf("%s:%d:%d", p.name, line, col)
}

func (p *jsonParser) value(depth int) (*node, error) {
	if depth > 64 {
		return nil, fmt.Errorf("%s: nested too deeply", p.pos())
	}
	tok, err := p.dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: unexpected end of JSON", p.pos())
		}
		return nil, fmt.Errorf("%s: %w", p.pos(), err)
	}
	src := p.pos()
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := newMap(src)
			for p.dec.More() {
				kt, err := p.dec.Token()
				if err != nil {
					return nil, fmt.Errorf("%s: %w", p.pos(), err)
				}
				k, _ := kt.(string) // the decoder guarantees object keys are strings
				if _, dup := n.m[k]; dup {
					return nil, fmt.Errorf("%s: key %q given twice", p.pos(), k)
				}
				c, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.set(k, c)
			}
			_, err := p.dec.Token() // '}'
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.pos(), err)
			}
			return n, nil
		case '[':
			n := &node{kind: kindList, src: src}
			for p.dec.More() {
				c, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.list = append(n.list, c)
			}
			if _, err := p.dec.Token(); err != nil { // ']'
				return nil, fmt.Errorf("%s: %w", p.pos(), err)
			}
			return n, nil
		}
	case string:
		return &node{kind: kindScalar, typ: typString, text: t, src: src}, nil
	case json.Number:
		return &node{kind: kindScalar, typ: typNumber, text: t.String(), src: src}, nil
	case bool:
		return &node{kind: kindScalar, typ: typBool, text: strconv.FormatBool(t), src: src}, nil
	case nil:
		return &node{kind: kindNull, src: src}, nil
	}
	return nil, fmt.Errorf("%s: unexpected JSON token %v", src, tok)
}

// envPrefix starts every environment variable the engine reads.
const envPrefix = "BERTH__"

// envAliases are older environment names kept for schema keys; BERTH__node__releases
// wins over BERTH_RELEASES when both are set.
var envAliases = map[string][]string{
	"BERTH_RELEASES":          {"node", "releases"},
	"BERTH_SHUTDOWN_DRAIN_MS": {"node", "shutdown_drain_ms"},
}

// parseEnv turns BERTH__section__key=value variables (os.Environ form), and the names in
// envAliases, into a tree. Other variables are ignored; a BERTH__ variable with an empty
// segment is an error.
func parseEnv(environ []string) (*node, error) {
	root := newMap("environment")
	var errs []error
	for _, kv := range environ {
		name, val, _ := strings.Cut(kv, "=")
		if path, ok := envAliases[name]; ok {
			if !hasEnv(environ, envPrefix+strings.Join(path, "__")) {
				setPath(root, path, val, "env "+name)
			}
			continue
		}
		rest, ok := strings.CutPrefix(name, envPrefix)
		if !ok {
			continue
		}
		path := strings.Split(rest, "__")
		if slices.Contains(path, "") {
			errs = append(errs, fmt.Errorf("environment variable %s: want BERTH__section__key, with no empty part", name))
			continue
		}
		setPath(root, path, val, "env "+name)
	}
	return root, errors.Join(errs...)
}

// hasEnv reports whether environ sets name.
func hasEnv(environ []string, name string) bool {
	return slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
}
