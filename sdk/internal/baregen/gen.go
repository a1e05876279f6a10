package baregen

import (
	"bytes"
	"fmt"
	"go/format"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// DefaultBareImport is the import path of the runtime the generated code calls.
const DefaultBareImport = "github.com/berthhq/berth/sdk/bare"

// Source is one schema file and the protocol version it describes (0 when the package has
// one unversioned schema).
type Source struct {
	Version int
	File    string // as named in the generated header
	Text    string
}

// Config says what to generate.
type Config struct {
	Package    string
	BareImport string // DefaultBareImport if empty
	Sources    []Source
}

// Generate parses the sources and returns the gofmt-ed Go source of their types and codecs.
func Generate(cfg Config) ([]byte, error) {
	if cfg.BareImport == "" {
		cfg.BareImport = DefaultBareImport
	}
	if len(cfg.Sources) == 0 {
		return nil, fmt.Errorf("baregen: no schema")
	}
	g := &gen{cfg: cfg, helpers: map[string]string{}}
	for i, s := range cfg.Sources {
		if i > 0 && s.Version <= cfg.Sources[i-1].Version {
			return nil, fmt.Errorf("baregen: versions must increase: v%d after v%d", s.Version, cfg.Sources[i-1].Version)
		}
		if len(cfg.Sources) > 1 && s.Version <= 0 {
			return nil, fmt.Errorf("baregen: %s: several schemas need a protocol version each (N=file)", s.File)
		}
		sch, err := Parse(s.File, s.Text)
		if err != nil {
			return nil, err
		}
		g.versions = append(g.versions, s.Version)
		g.schemas = append(g.schemas, sch)
	}
	if err := g.merge(); err != nil {
		return nil, err
	}
	src := g.emit()
	if g.err != nil {
		return nil, g.err
	}
	out, err := format.Source(src)
	if err != nil {
		return nil, fmt.Errorf("baregen: formatting the output: %v\n%s", err, src)
	}
	return out, nil
}

// MARK: merging the versions

// decl is a user type over all versions: its Go shape comes from the latest version that
// declares it.
type decl struct {
	name    string
	d       *Decl   // the latest declaration
	per     []*Decl // by version index; nil where the version lacks it
	fields  []*field
	members []*member
	varies  bool // the declaration differs between versions
	needV   bool // its codec depends on the version
	isEntry bool // named by a #go:entry directive
	reached bool // its codec is emitted
}

type field struct {
	*Field
	in []bool // by version index
}

type member struct {
	name string
	tags []int64 // by version index; -1 where the version lacks it
}

type gen struct {
	cfg      Config
	versions []int
	schemas  []*Schema
	decls    []*decl
	byName   map[string]*decl
	helpers  map[string]string // codec helpers for anonymous types, by function name
	maps     bool              // the output uses Go maps (imports maps and slices)
	err      error             // the first error of emitting
	out      bytes.Buffer
}

func (g *gen) latest() int { return len(g.versions) - 1 }

func (g *gen) errf(d *Decl, format string, args ...any) error {
	file := g.cfg.Sources[g.latest()].File
	for i, s := range g.schemas {
		if s.Lookup(d.Name) == d {
			file = g.cfg.Sources[i].File
		}
	}
	return &Error{file, d.Line, fmt.Sprintf(format, args...)}
}

func (g *gen) merge() error {
	g.byName = map[string]*decl{}
	// The latest schema's order first, then the types only older versions have.
	for vi := g.latest(); vi >= 0; vi-- {
		for _, d := range g.schemas[vi].Types {
			if g.byName[d.Name] == nil {
				md := &decl{name: d.Name, d: d, per: make([]*Decl, len(g.versions))}
				g.byName[d.Name] = md
				g.decls = append(g.decls, md)
			}
		}
	}
	for _, md := range g.decls {
		for vi, s := range g.schemas {
			md.per[vi] = s.Lookup(md.name)
		}
		if err := g.mergeDecl(md); err != nil {
			return err
		}
	}
	// Entries, and the checks of the Go mapping.
	for _, md := range g.decls {
		for _, d := range md.per {
			if d == nil {
				continue
			}
			var err error
			walkTypes(d.Type, func(t *Type) {
				if err == nil && t.Kind == Map && t.Entry != "" {
					err = g.checkEntry(d, t)
				}
			})
			if err != nil {
				return err
			}
		}
	}
	// needV: a fixpoint over the references.
	for _, md := range g.decls {
		md.needV = md.varies
	}
	for changed := true; changed; {
		changed = false
		for _, md := range g.decls {
			if !md.needV && g.refsNeedV(md) {
				md.needV, changed = true, true
			}
		}
	}
	// Codecs are emitted for the types reachable from the roots: the types no other type
	// uses (the top-level messages).
	used := map[string]bool{}
	for _, md := range g.decls {
		for _, d := range md.per {
			if d != nil {
				walkTypes(d.Type, func(t *Type) {
					if t.Kind == Ref && t.Name != md.name {
						used[t.Name] = true
					}
				})
			}
		}
	}
	var reach func(md *decl)
	reach = func(md *decl) {
		if md.reached {
			return
		}
		md.reached = true
		for _, d := range md.per {
			if d != nil {
				walkTypes(d.Type, func(t *Type) {
					if t.Kind == Ref {
						reach(g.byName[t.Name])
					}
					if t.Kind == Map && t.Entry != "" { // entries are read inline
						for _, f := range g.byName[t.Entry].d.Type.Fields {
							walkTypes(f.Type, func(t *Type) {
								if t.Kind == Ref {
									reach(g.byName[t.Name])
								}
							})
						}
					}
				})
			}
		}
	}
	for _, md := range g.decls {
		if !used[md.name] && !md.isEntry {
			reach(md)
		}
	}
	return g.checkGo()
}

// walkTypes calls f on t and every type inside it.
func walkTypes(t *Type, f func(*Type)) {
	f(t)
	if t.Key != nil {
		walkTypes(t.Key, f)
	}
	if t.Elem != nil {
		walkTypes(t.Elem, f)
	}
	for _, fl := range t.Fields {
		walkTypes(fl.Type, f)
	}
	for _, m := range t.Members {
		walkTypes(m.Type, f)
	}
}

func (g *gen) refsNeedV(md *decl) bool {
	need := false
	for _, d := range md.per {
		if d != nil {
			walkTypes(d.Type, func(t *Type) {
				if t.Kind == Ref && g.byName[t.Name].needV {
					need = true
				}
			})
		}
	}
	return need
}

// mergeDecl merges the versions of one type: struct fields may be added (each older version's
// fields are a subsequence of the latest's) and union members added, removed or renumbered;
// any other difference is an error.
func (g *gen) mergeDecl(md *decl) error {
	var first *Decl
	for _, d := range md.per {
		if d == nil {
			continue
		}
		if first == nil {
			first = d
		} else if !Equal(first.Type, d.Type) {
			md.varies = true
		}
		if d.Type.Kind != md.d.Type.Kind {
			return g.errf(d, "type %s is a %s in one version and a %s in another", md.name, kindName(d.Type.Kind), kindName(md.d.Type.Kind))
		}
	}
	switch md.d.Type.Kind {
	case Struct:
		for _, f := range md.d.Type.Fields {
			md.fields = append(md.fields, &field{Field: f, in: make([]bool, len(g.versions))})
		}
		for vi, d := range md.per {
			if d == nil { // a version without the type has any of its fields
				for _, f := range md.fields {
					f.in[vi] = true
				}
				continue
			}
			j := 0
			for _, f := range d.Type.Fields {
				for j < len(md.fields) && md.fields[j].Name != f.Name {
					j++
				}
				if j == len(md.fields) {
					return g.errf(d, "field %s.%s of v%d is missing from v%d, or out of order (a version may only add fields)", md.name, f.Name, g.versions[vi], g.versions[g.latestOf(md)])
				}
				if !Equal(f.Type, md.fields[j].Type) || !mapsEqual(f.Directives, md.fields[j].Directives) {
					return g.errf(d, "field %s.%s changes its type between versions", md.name, f.Name)
				}
				md.fields[j].in[vi] = true
				j++
			}
		}
	case Union:
		idx := map[string]*member{}
		for vi := g.latestOf(md); vi >= 0; vi-- {
			d := md.per[vi]
			if d == nil {
				continue
			}
			for _, m := range d.Type.Members {
				if m.Type.Kind != Ref {
					return g.errf(d, "union %s: member %s must be a user type (Go gives it the union's method)", md.name, m.Type)
				}
				mm := idx[m.Type.Name]
				if mm == nil {
					mm = &member{name: m.Type.Name, tags: make([]int64, len(g.versions))}
					for i := range mm.tags {
						mm.tags[i] = -1
					}
					idx[mm.name] = mm
					md.members = append(md.members, mm)
				}
				mm.tags[vi] = int64(m.Tag)
			}
		}
		// A version without the union numbers its members as the latest version with it.
		for vi, d := range md.per {
			if d == nil {
				for _, m := range md.members {
					m.tags[vi] = m.tags[g.latestOf(md)]
				}
			}
		}
	default:
		if md.varies {
			return g.errf(md.d, "type %s differs between versions: only struct fields and union members may change", md.name)
		}
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func (g *gen) latestOf(md *decl) int {
	for vi := g.latest(); vi >= 0; vi-- {
		if md.per[vi] != nil {
			return vi
		}
	}
	return 0
}

func kindName(k Kind) string {
	return [...]string{"primitive", "fixed-length data", "void", "optional", "list", "map", "union", "struct", "enum", "user type"}[k]
}

// checkEntry checks a map's #go:entry struct: its first field has the key's type, the others
// the value's (the fields of a struct value, or the value itself).
func (g *gen) checkEntry(d *Decl, m *Type) error {
	e := g.byName[m.Entry]
	if e == nil || e.d.Type.Kind != Struct {
		return g.errf(d, "#go:entry %s: no struct type of that name", m.Entry)
	}
	e.isEntry = true
	ef := e.d.Type.Fields
	if !Equal(ef[0].Type, m.Key) {
		return g.errf(d, "#go:entry %s: its first field has type %s, the map key %s", m.Entry, ef[0].Type, m.Key)
	}
	vals := g.valueFields(m)
	if vals == nil {
		if len(ef) != 2 || !Equal(ef[1].Type, m.Elem) {
			return g.errf(d, "#go:entry %s: want two fields, the key (%s) and the value (%s)", m.Entry, m.Key, m.Elem)
		}
		return nil
	}
	if len(ef) != 1+len(vals) {
		return g.errf(d, "#go:entry %s: want the key field, then the %d fields of the value", m.Entry, len(vals))
	}
	for i, f := range vals {
		if ef[i+1].Name != f.Name || !Equal(ef[i+1].Type, f.Type) {
			return g.errf(d, "#go:entry %s: field %s does not match the value's field %s %s", m.Entry, ef[i+1].Name, f.Name, f.Type)
		}
	}
	return nil
}

// valueFields returns the fields of a map's value when it is a struct, or nil.
func (g *gen) valueFields(m *Type) []*Field {
	v := m.Elem
	if v.Kind == Ref && g.byName[v.Name].d.Type.Kind == Struct {
		v = g.byName[v.Name].d.Type
	}
	if v.Kind == Struct {
		return v.Fields
	}
	return nil
}

// checkGo rejects what has no Go form: anonymous structs, unions and enums outside a map
// entry's value, void fields, maps without an entry whose keys Go cannot sort.
func (g *gen) checkGo() error {
	for _, md := range g.decls {
		for _, d := range md.per {
			if d == nil {
				continue
			}
			var check func(t *Type, top, entryValue bool) error
			check = func(t *Type, top, entryValue bool) error {
				switch t.Kind {
				case Struct:
					if !top && !entryValue {
						return g.errf(d, "%s: an anonymous struct has no Go type name: declare it as a user type", md.name)
					}
					for _, f := range t.Fields {
						if err := check(f.Type, false, false); err != nil {
							return err
						}
					}
				case Union, Enum:
					if !top {
						return g.errf(d, "%s: an anonymous %s has no Go type name: declare it as a user type", md.name, kindName(t.Kind))
					}
				case Ref:
					if !top && g.byName[t.Name].d.Type.Kind == Void {
						return g.errf(d, "%s: void type %s is only a union member", md.name, t.Name)
					}
				case Optional:
					if t.Elem.Kind == Optional {
						return g.errf(d, "%s: optional<optional<…>> has no Go form", md.name)
					}
					return check(t.Elem, false, false)
				case List:
					return check(t.Elem, false, false)
				case Map:
					if t.Entry == "" {
						if k := g.resolve(t.Key); k.Kind == Prim && k.Prim == "bool" {
							return g.errf(d, "%s: a map<bool><…> needs #go:entry (Go cannot sort bool keys)", md.name)
						}
					}
					return check(t.Elem, false, t.Entry != "")
				}
				return nil
			}
			if err := check(d.Type, true, false); err != nil {
				return err
			}
		}
	}
	for _, md := range g.decls {
		if md.d.Type.Kind == Union {
			for _, m := range md.members {
				switch g.byName[m.name].d.Type.Kind {
				case Union, Optional:
					return g.errf(md.d, "union %s: member %s is a %s, which cannot have Go methods", md.name, m.name, kindName(g.byName[m.name].d.Type.Kind))
				}
			}
		}
	}
	return nil
}

// resolve follows a reference to the declared type.
func (g *gen) resolve(t *Type) *Type {
	for t.Kind == Ref {
		t = g.byName[t.Name].d.Type
	}
	return t
}

// MARK: Go names and types

// initialisms are the words a Go name spells in capitals.
var initialisms = map[string]bool{"ID": true, "OK": true, "SQL": true}

func goWord(w string) string {
	if u := strings.ToUpper(w); initialisms[u] {
		return u
	}
	return strings.ToUpper(w[:1]) + strings.ToLower(w[1:])
}

// fieldName turns a lowerCamel field name into a Go one: actorId → ActorID, sql → SQL.
func fieldName(s string) string {
	var b strings.Builder
	start := 0
	for i := 1; i <= len(s); i++ {
		if i == len(s) || unicode.IsUpper(rune(s[i])) {
			b.WriteString(goWord(s[start:i]))
			start = i
		}
	}
	return b.String()
}

// enumValueName turns an UPPER_SNAKE enum value into Go: SLEEP_INTENT → SleepIntent, OK → OK.
func enumValueName(s string) string {
	var b strings.Builder
	for _, w := range strings.Split(s, "_") {
		if w != "" {
			b.WriteString(goWord(w))
		}
	}
	return b.String()
}

// human turns a type name into words for messages: ActorName → actor name.
func human(s string) string {
	var b strings.Builder
	for i, c := range s {
		if unicode.IsUpper(c) && i > 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

var goPrims = map[string]string{
	"uint": "uint64", "int": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64",
	"i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "f32": "float32", "f64": "float64",
	"bool": "bool", "str": "string", "data": "[]byte",
}

// goType is the Go type of a type expression.
func (g *gen) goType(t *Type) string {
	switch t.Kind {
	case Prim:
		return goPrims[t.Prim]
	case Fixed:
		return fmt.Sprintf("[%d]byte", t.Len)
	case Ref:
		return t.Name
	case Optional:
		if g.nilable(t.Elem) {
			return g.goType(t.Elem)
		}
		return "*" + g.goType(t.Elem)
	case List:
		if t.Len > 0 {
			return fmt.Sprintf("[%d]%s", t.Len, g.goType(t.Elem))
		}
		return "[]" + g.goType(t.Elem)
	case Map:
		if t.Entry != "" {
			return "[]" + t.Entry
		}
		return "map[" + g.goType(t.Key) + "]" + g.goType(t.Elem)
	case Void:
		return "struct{}"
	}
	panic("baregen: no Go type for " + t.String())
}

// nilable reports whether the Go type of t has nil (a slice, map, pointer or interface), which
// then stands for an absent optional.
func (g *gen) nilable(t *Type) bool {
	switch t.Kind {
	case Prim:
		return t.Prim == "data"
	case List:
		return t.Len == 0
	case Map, Optional:
		return true
	case Ref:
		switch d := g.byName[t.Name].d.Type; d.Kind {
		case Union:
			return true
		case Struct, Enum, Void:
			return false
		default:
			return g.nilable(d)
		}
	}
	return false
}

// key names an anonymous type in its codec helpers' names: list<data> → ListData.
func (g *gen) key(t *Type) string {
	switch t.Kind {
	case Prim:
		return strings.ToUpper(t.Prim[:1]) + t.Prim[1:]
	case Fixed:
		return fmt.Sprintf("Data%d", t.Len)
	case Ref:
		return t.Name
	case Optional:
		return "Optional" + g.key(t.Elem)
	case List:
		if t.Len > 0 {
			return fmt.Sprintf("Array%d%s", t.Len, g.key(t.Elem))
		}
		return "List" + g.key(t.Elem)
	case Map:
		if t.Entry != "" {
			return "Map" + t.Entry
		}
		return "Map" + g.key(t.Key) + g.key(t.Elem)
	}
	panic("baregen: no key for " + t.String())
}

// needV reports whether decoding t depends on the protocol version.
func (g *gen) exprNeedV(t *Type) bool {
	need := false
	walkTypes(t, func(t *Type) {
		if t.Kind == Ref && g.byName[t.Name].needV {
			need = true
		}
	})
	if t.Kind == Map && t.Entry != "" {
		for _, f := range g.byName[t.Entry].d.Type.Fields {
			need = need || g.exprNeedV(f.Type)
		}
	}
	return need
}

func (g *gen) vParam(need bool) string {
	if need {
		return ", v int"
	}
	return ""
}

func (g *gen) vArg(need bool) string {
	if need {
		return ", v"
	}
	return ""
}

// MARK: codec expressions

var readers = map[string]string{
	"uint": "Uint", "int": "Int", "u8": "U8", "u16": "U16", "u32": "U32", "u64": "U64",
	"i8": "I8", "i16": "I16", "i32": "I32", "i64": "I64", "f32": "F32", "f64": "F64",
	"bool": "Bool", "str": "Str", "data": "Data",
}

// read returns a Go expression that reads a t from r.
func (g *gen) read(t *Type) string {
	switch t.Kind {
	case Prim:
		return "r." + readers[t.Prim] + "()"
	case Ref:
		return "read" + t.Name + "(r" + g.vArg(g.byName[t.Name].needV) + ")"
	case Optional:
		if t.Elem.Kind == Prim && t.Elem.Prim == "data" {
			return "r.OptData()"
		}
	}
	name := g.key(t)
	g.helper(t)
	return "read" + name + "(r" + g.vArg(g.exprNeedV(t)) + ")"
}

// write returns a Go statement that writes the t in val to w.
func (g *gen) write(t *Type, val string) string {
	switch t.Kind {
	case Prim:
		return "w." + readers[t.Prim] + "(" + val + ")"
	case Ref:
		return "write" + t.Name + "(w, " + val + g.vArg(g.byName[t.Name].needV) + ")"
	case Optional:
		if t.Elem.Kind == Prim && t.Elem.Prim == "data" {
			return "w.OptData(" + val + ")"
		}
	}
	g.helper(t)
	return "write" + g.key(t) + "(w, " + val + g.vArg(g.exprNeedV(t)) + ")"
}

// helper records the codec functions of an anonymous type.
func (g *gen) helper(t *Type) {
	name := g.key(t)
	if _, ok := g.helpers[name]; ok {
		return
	}
	g.helpers[name] = "" // reserve against recursion
	if g.byName[name] != nil && g.err == nil {
		g.err = g.errf(g.byName[name].d, "type %s has the name of the codec helper of %s: rename it", name, t)
	}
	gt := g.goType(t)
	vp := g.vParam(g.exprNeedV(t))
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	switch t.Kind {
	case Fixed:
		p("func read%s(r *bare.Reader) (x %s) {", name, gt)
		p("r.FixedDataInto(x[:])")
		p("return x")
		p("}\n")
		p("func write%s(w *bare.Writer, x %s) { w.FixedData(x[:]) }", name, gt)
	case Optional:
		p("func read%s(r *bare.Reader%s) %s {", name, vp, gt)
		p("if !r.Optional() {")
		p("return nil")
		p("}")
		if g.nilable(t.Elem) {
			p("return %s", g.read(t.Elem))
		} else {
			p("x := %s", g.read(t.Elem))
			p("return &x")
		}
		p("}\n")
		p("func write%s(w *bare.Writer, x %s%s) {", name, gt, vp)
		p("w.Optional(x != nil)")
		p("if x != nil {")
		if g.nilable(t.Elem) {
			p("%s", g.write(t.Elem, "x"))
		} else {
			p("%s", g.write(t.Elem, "*x"))
		}
		p("}")
		p("}")
	case List:
		if t.Len > 0 {
			p("func read%s(r *bare.Reader%s) (l %s) {", name, vp, gt)
			p("for i := range l {")
			p("l[i] = %s", g.read(t.Elem))
			p("}")
			p("return l")
			p("}\n")
			p("func write%s(w *bare.Writer, l %s%s) {", name, gt, vp)
			p("for i := range l {")
			p("%s", g.write(t.Elem, "l[i]"))
			p("}")
			p("}")
			break
		}
		p("func read%s(r *bare.Reader%s) %s {", name, vp, gt)
		p("n := r.ListLen()")
		p("l := make(%s, 0, n)", gt)
		p("for i := 0; i < n && r.Err() == nil; i++ {")
		p("l = append(l, %s)", g.read(t.Elem))
		p("}")
		p("return l")
		p("}\n")
		p("func write%s(w *bare.Writer, l %s%s) {", name, gt, vp)
		p("w.ListLen(len(l))")
		p("for _, x := range l {")
		p("%s", g.write(t.Elem, "x"))
		p("}")
		p("}")
	case Map:
		if t.Entry != "" {
			g.entryMap(p, t, name, gt, vp)
			break
		}
		g.maps = true
		p("func read%s(r *bare.Reader%s) %s {", name, vp, gt)
		p("n := r.MapLen()")
		p("m := make(%s, n)", gt)
		p("for i := 0; i < n && r.Err() == nil; i++ {")
		p("start := r.Offset()")
		p("k := %s", g.read(t.Key))
		p("x := %s", g.read(t.Elem))
		p("if _, dup := m[k]; dup {")
		p(`r.FailAt(start, "duplicate map key %%v", k)`)
		p("}")
		p("m[k] = x")
		p("}")
		p("return m")
		p("}\n")
		p("func write%s(w *bare.Writer, m %s%s) {", name, gt, vp)
		p("w.MapLen(len(m))")
		p("for _, k := range slices.Sorted(maps.Keys(m)) {")
		p("%s", g.write(t.Key, "k"))
		p("%s", g.write(t.Elem, "m[k]"))
		p("}")
		p("}")
	default:
		panic("baregen: no helper for " + t.String())
	}
	g.helpers[name] = b.String()
}

// entryMap writes the codec of a map kept as a slice of entry structs, in wire order.
func (g *gen) entryMap(p func(string, ...any), t *Type, name, gt, vp string) {
	ef := g.byName[t.Entry].d.Type.Fields
	keyField := fieldName(ef[0].Name)
	vals := g.valueFields(t)
	if vals == nil {
		vals = []*Field{{Name: ef[1].Name, Type: t.Elem}}
	}
	kt := g.goType(t.Key)
	p("func read%s(r *bare.Reader%s) %s {", name, vp, gt)
	p("n := r.MapLen()")
	p("l := make(%s, 0, n)", gt)
	p("var keys bare.KeySet[%s]", kt)
	p("for i := 0; i < n && r.Err() == nil; i++ {")
	p("start := r.Offset()")
	p("var x %s", t.Entry)
	p("x.%s = %s", keyField, g.read(t.Key))
	for i, f := range vals {
		p("x.%s = %s", fieldName(ef[i+1].Name), g.read(f.Type))
	}
	p("if keys.Add(x.%s) {", keyField)
	p(`r.FailAt(start, "duplicate map key %%v", x.%s)`, keyField)
	p("}")
	p("l = append(l, x)")
	p("}")
	p("return l")
	p("}\n")
	verb := "%v"
	if g.resolve(t.Key).Kind == Prim && t.Key.Prim == "str" {
		verb = "%q"
	}
	p("func write%s(w *bare.Writer, l %s%s) {", name, gt, vp)
	p("w.MapLen(len(l))")
	p("var keys bare.KeySet[%s]", kt)
	p("for _, x := range l {")
	p("if keys.Add(x.%s) {", keyField)
	p(`w.Failf("duplicate %s %s", x.%s)`, human(t.Entry), verb, keyField)
	p("}")
	p("%s", g.write(t.Key, "x."+keyField))
	for i, f := range vals {
		p("%s", g.write(f.Type, "x."+fieldName(ef[i+1].Name)))
	}
	p("}")
	p("}")
}

// MARK: versions

// cond returns a Go condition on v that holds for the versions in in, or "" for all of them.
func (g *gen) cond(in []bool) string {
	var vs []int
	for i, ok := range in {
		if ok {
			vs = append(vs, g.versions[i])
		}
	}
	switch {
	case len(vs) == len(g.versions):
		return ""
	case len(vs) == 0:
		return "false"
	case in[g.latest()] && contiguous(in):
		return fmt.Sprintf("v >= %d", vs[0])
	case in[0] && contiguous(in):
		return fmt.Sprintf("v <= %d", vs[len(vs)-1])
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = fmt.Sprintf("v == %d", v)
	}
	return strings.Join(parts, " || ")
}

func contiguous(in []bool) bool {
	first, last := slices.Index(in, true), -1
	for i, ok := range in {
		if ok {
			last = i
		}
	}
	return first >= 0 && !slices.Contains(in[first:last+1], false)
}

func (g *gen) versionList(vis []int) string {
	parts := make([]string, len(vis))
	for i, vi := range vis {
		parts[i] = strconv.Itoa(g.versions[vi])
	}
	return strings.Join(parts, ", ")
}

func (g *gen) vNames(vis []int) string {
	parts := make([]string, len(vis))
	for i, vi := range vis {
		parts[i] = "v" + strconv.Itoa(g.versions[vi])
	}
	return strings.Join(parts, ", ")
}

// groups splits the version indexes by key, the group of the latest version last.
func groups[K comparable](n int, key func(vi int) K) (keys []K, vis [][]int) {
	for vi := range n {
		k := key(vi)
		i := slices.Index(keys, k)
		if i < 0 {
			keys, vis = append(keys, k), append(vis, nil)
			i = len(keys) - 1
		}
		vis[i] = append(vis[i], vi)
	}
	// The group holding the latest version goes last (it becomes the switch default).
	for i := range keys {
		if slices.Contains(vis[i], n-1) && i != len(keys)-1 {
			keys = append(append(keys[:i:i], keys[i+1:]...), keys[i])
			vis = append(append(vis[:i:i], vis[i+1:]...), vis[i])
			break
		}
	}
	return keys, vis
}
