package baregen

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"unicode"
)

// Kind is the kind of a schema type.
type Kind int

// The kinds of BARE types.
const (
	Prim     Kind = iota // uint, int, u8…u64, i8…i64, f32, f64, bool, str, data (Type.Prim)
	Fixed                // data[N] (Type.Len)
	Void                 // void
	Optional             // optional<Elem>
	List                 // list<Elem>, or list<Elem>[Len] when Len > 0
	Map                  // map<Key><Elem>
	Union                // union {Members}
	Struct               // struct {Fields}
	Enum                 // enum {Values}
	Ref                  // a user type, by Name
)

// Schema is a parsed schema file: its user types in declaration order.
type Schema struct {
	File  string
	Types []*Decl
	names map[string]*Decl
}

// Lookup returns the user type named name, or nil.
func (s *Schema) Lookup(name string) *Decl { return s.names[name] }

// Decl is a user type: "type Name <type>".
type Decl struct {
	Name string
	Type *Type
	Doc  []string // the comment lines right above the declaration
	Line int
	// Directives are the #go: comments on the declaration's line (see the package doc).
	Directives map[string]string
}

// Type is a type expression. Line is where it starts; it is not part of the type's identity.
type Type struct {
	Kind    Kind
	Prim    string // for Prim
	Len     int    // for Fixed, and List of fixed length
	Elem    *Type  // for Optional, List, Map (the value)
	Key     *Type  // for Map
	Name    string // for Ref
	Fields  []*Field
	Members []*Member
	Values  []*EnumValue
	// Entry, for a Map, names the struct type whose Go slice represents it (#go:entry).
	Entry string
	Line  int `bare:"-"`
}

// Field is a struct field.
type Field struct {
	Name       string
	Type       *Type
	Doc        []string `bare:"-"`
	Comment    string   `bare:"-"` // the comment after the field on its line
	Line       int      `bare:"-"`
	Directives map[string]string
}

// Member is a union member and its tag.
type Member struct {
	Type *Type
	Tag  uint64
}

// EnumValue is an enum value name and its number.
type EnumValue struct {
	Name    string
	Value   uint64
	Doc     []string `bare:"-"`
	Comment string   `bare:"-"`
	Line    int      `bare:"-"`
}

// Equal reports whether a and b are the same type (same encoding and the same Go mapping),
// ignoring comments and lines.
func Equal(a, b *Type) bool { return equalValue(reflect.ValueOf(a), reflect.ValueOf(b)) }

func equalValue(a, b reflect.Value) bool {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return equalValue(a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !equalValue(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Struct:
		for i := range a.NumField() {
			if a.Type().Field(i).Tag.Get("bare") == "-" {
				continue
			}
			if !equalValue(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a.Interface(), b.Interface())
	}
}

// String renders t in schema syntax (anonymous structs, unions and enums abbreviated).
func (t *Type) String() string {
	switch t.Kind {
	case Prim:
		return t.Prim
	case Fixed:
		return fmt.Sprintf("data[%d]", t.Len)
	case Void:
		return "void"
	case Optional:
		return "optional<" + t.Elem.String() + ">"
	case List:
		if t.Len > 0 {
			return fmt.Sprintf("list<%s>[%d]", t.Elem, t.Len)
		}
		return "list<" + t.Elem.String() + ">"
	case Map:
		return "map<" + t.Key.String() + "><" + t.Elem.String() + ">"
	case Union:
		return "union {…}"
	case Struct:
		return "struct {…}"
	case Enum:
		return "enum {…}"
	}
	return t.Name
}

// Error is a schema error; Line is 0 when it concerns the whole file.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line == 0 {
		return e.File + ": " + e.Msg
	}
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// MARK: lexer

type token struct {
	text string // a word, a number or one punctuation character; "" at the end
	line int
}

type comment struct {
	text    string
	ownLine bool // nothing but blanks before it on its line
}

type lexer struct {
	file     string
	toks     []token
	comments map[int]comment  // by line
	dirs     map[int][]string // #go: directives by line
}

func lex(file, src string) (*lexer, error) {
	lx := &lexer{file: file, comments: map[int]comment{}, dirs: map[int][]string{}}
	line := 1
	lineStart := true
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c == '#':
			end := strings.IndexByte(src[i:], '\n')
			if end < 0 {
				end = len(src) - i
			}
			text := strings.TrimRight(src[i+1:i+end], " \t\r")
			if d, ok := strings.CutPrefix(text, "go:"); ok {
				lx.dirs[line] = append(lx.dirs[line], d)
			} else {
				lx.comments[line] = comment{strings.TrimPrefix(text, " "), lineStart}
			}
			i += end
			continue
		case isWord(rune(c)):
			j := i
			for j < len(src) && isWord(rune(src[j])) {
				j++
			}
			lx.toks = append(lx.toks, token{src[i:j], line})
			i = j
		case strings.IndexByte("{}<>[]|=:", c) >= 0:
			lx.toks = append(lx.toks, token{src[i : i+1], line})
			i++
		default:
			return nil, &Error{file, line, fmt.Sprintf("unexpected character %q", c)}
		}
		lineStart = false
	}
	lx.toks = append(lx.toks, token{"", line})
	return lx, nil
}

func isWord(c rune) bool { return c == '_' || c < 128 && (unicode.IsLetter(c) || unicode.IsDigit(c)) }

// doc returns the block of whole-line comments that ends on the line before line.
func (lx *lexer) doc(line int) []string {
	var lines []string
	for l := line - 1; ; l-- {
		c, ok := lx.comments[l]
		if !ok || !c.ownLine {
			break
		}
		lines = append([]string{c.text}, lines...)
	}
	return lines
}

// trailing returns the comment after the code on line, if any.
func (lx *lexer) trailing(line int) string {
	if c, ok := lx.comments[line]; ok && !c.ownLine {
		return c.text
	}
	return ""
}

// MARK: parser

type parser struct {
	*lexer
	pos int
}

// Parse parses a schema in the BARE schema language (draft-devault-bare: "type Name <type>"
// declarations, # comments) and checks it: every name it uses is declared once, union tags and
// enum values are unique, void appears only as a union member or a user type, map keys are
// primitive. Errors name the file and line.
func Parse(file, src string) (*Schema, error) {
	lx, err := lex(file, src)
	if err != nil {
		return nil, err
	}
	p := &parser{lexer: lx}
	s := &Schema{File: file, names: map[string]*Decl{}}
	for p.peek().text != "" {
		d, err := p.decl()
		if err != nil {
			return nil, err
		}
		if prev := s.names[d.Name]; prev != nil {
			return nil, p.errAt(d.Line, "type %s is already declared on line %d", d.Name, prev.Line)
		}
		s.names[d.Name] = d
		s.Types = append(s.Types, d)
	}
	for line, ds := range lx.dirs {
		return nil, p.errAt(line, "directive #go:%s is not on the line of a type or field declaration", ds[0])
	}
	if err := check(s); err != nil {
		return nil, err
	}
	return s, nil
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.text != "" {
		p.pos++
	}
	return t
}

func (p *parser) errAt(line int, format string, args ...any) error {
	return &Error{p.file, line, fmt.Sprintf(format, args...)}
}

func describe(t token) string {
	if t.text == "" {
		return "end of file"
	}
	return strconv.Quote(t.text)
}

func (p *parser) expect(text string) (token, error) {
	t := p.next()
	if t.text != text {
		return t, p.errAt(t.line, "expected %q, found %s", text, describe(t))
	}
	return t, nil
}

// directives takes the #go: directives of line, checking their names against allowed.
func (p *parser) directives(line int, allowed ...string) (map[string]string, error) {
	ds := p.dirs[line]
	delete(p.dirs, line)
	if len(ds) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, d := range ds {
		name, arg, _ := strings.Cut(d, " ")
		arg = strings.TrimSpace(arg)
		if !contains(allowed, name) {
			return nil, p.errAt(line, "unknown or misplaced directive #go:%s (allowed here: %s)", name, strings.Join(allowed, ", "))
		}
		if arg == "" {
			return nil, p.errAt(line, "directive #go:%s needs an argument", name)
		}
		m[name] = arg
	}
	return m, nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (p *parser) decl() (*Decl, error) {
	t := p.next()
	d := &Decl{Line: t.line, Doc: p.doc(t.line)}
	switch t.text {
	case "type":
	case "enum": // the older drafts' "enum Name {…}"
		name := p.next()
		if err := p.userTypeName(name); err != nil {
			return nil, err
		}
		d.Name = name.text
		dirs, err := p.directives(t.line, "prefix", "type")
		if err != nil {
			return nil, err
		}
		d.Directives = dirs
		e, err := p.enumBody(name.line)
		d.Type = e
		return d, err
	default:
		return nil, p.errAt(t.line, "expected a type declaration (\"type Name …\"), found %s", describe(t))
	}
	name := p.next()
	if err := p.userTypeName(name); err != nil {
		return nil, err
	}
	d.Name = name.text
	typ, err := p.typ()
	if err != nil {
		return nil, err
	}
	d.Type = typ
	allowed := []string{}
	switch typ.Kind {
	case Enum:
		allowed = []string{"prefix", "type"}
	case Map:
		allowed = []string{"entry"}
	}
	if d.Directives, err = p.directives(t.line, allowed...); err != nil {
		return nil, err
	}
	if e := d.Directives["entry"]; e != "" {
		typ.Entry = e
	}
	return d, nil
}

func (p *parser) userTypeName(t token) error {
	if t.text == "" || !unicode.IsUpper(rune(t.text[0])) || strings.ContainsRune(t.text, '_') {
		return p.errAt(t.line, "expected a user type name (an upper-case letter, then letters and digits), found %s", describe(t))
	}
	return nil
}

var prims = map[string]bool{
	"uint": true, "int": true, "u8": true, "u16": true, "u32": true, "u64": true,
	"i8": true, "i16": true, "i32": true, "i64": true, "f32": true, "f64": true,
	"bool": true, "str": true, "data": true,
}

func (p *parser) typ() (*Type, error) {
	t := p.next()
	typ := &Type{Line: t.line}
	switch t.text {
	case "void":
		typ.Kind = Void
	case "data":
		typ.Kind, typ.Prim = Prim, "data"
		if open := p.peek().text; open == "[" || open == "<" { // data[N]; data<N> in older drafts
			p.next()
			n, err := p.length()
			if err != nil {
				return nil, err
			}
			if _, err := p.expect(map[string]string{"[": "]", "<": ">"}[open]); err != nil {
				return nil, err
			}
			typ.Kind, typ.Prim, typ.Len = Fixed, "", n
		}
	case "optional":
		typ.Kind = Optional
		elem, err := p.angled()
		if err != nil {
			return nil, err
		}
		typ.Elem = elem
	case "list":
		typ.Kind = List
		elem, err := p.angled()
		if err != nil {
			return nil, err
		}
		typ.Elem = elem
		if p.peek().text == "[" {
			p.next()
			if typ.Len, err = p.length(); err != nil {
				return nil, err
			}
			if _, err := p.expect("]"); err != nil {
				return nil, err
			}
		}
	case "map":
		typ.Kind = Map
		key, err := p.angled()
		if err != nil {
			return nil, err
		}
		val, err := p.angled()
		if err != nil {
			return nil, err
		}
		typ.Key, typ.Elem = key, val
	case "union":
		return p.unionBody(t.line)
	case "struct":
		return p.structBody(t.line)
	case "enum":
		return p.enumBody(t.line)
	default:
		if prims[t.text] {
			typ.Kind, typ.Prim = Prim, t.text
			break
		}
		if err := p.userTypeName(t); err != nil {
			return nil, p.errAt(t.line, "expected a type, found %s", describe(t))
		}
		typ.Kind, typ.Name = Ref, t.text
	}
	return typ, nil
}

func (p *parser) angled() (*Type, error) {
	if _, err := p.expect("<"); err != nil {
		return nil, err
	}
	t, err := p.typ()
	if err != nil {
		return nil, err
	}
	_, err = p.expect(">")
	return t, err
}

func (p *parser) number() (uint64, token, error) {
	t := p.next()
	n, err := strconv.ParseUint(t.text, 10, 64)
	if err != nil {
		return 0, t, p.errAt(t.line, "expected a number, found %s", describe(t))
	}
	return n, t, nil
}

func (p *parser) length() (int, error) {
	n, t, err := p.number()
	if err != nil {
		return 0, err
	}
	if n == 0 || n > 1<<20 {
		return 0, p.errAt(t.line, "length %d is out of range (1 to %d)", n, 1<<20)
	}
	return int(n), nil
}

func (p *parser) structBody(line int) (*Type, error) {
	typ := &Type{Kind: Struct, Line: line}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for p.peek().text != "}" {
		name := p.next()
		if name.text == "" || !unicode.IsLower(rune(name.text[0])) || strings.ContainsRune(name.text, '_') {
			return nil, p.errAt(name.line, "expected a field name (a lower-case letter, then letters and digits) or \"}\", found %s", describe(name))
		}
		if prev, dup := seen[name.text]; dup {
			return nil, p.errAt(name.line, "field %s is already declared on line %d", name.text, prev)
		}
		seen[name.text] = name.line
		if _, err := p.expect(":"); err != nil {
			return nil, err
		}
		ft, err := p.typ()
		if err != nil {
			return nil, err
		}
		f := &Field{Name: name.text, Type: ft, Line: name.line, Doc: p.doc(name.line)}
		// The trailing comment and directives of a line belong to the field that ends it
		// (not to a field of an anonymous struct inside it).
		if p.peek().line != name.line {
			f.Comment = p.trailing(name.line)
			if f.Directives, err = p.directives(name.line, "entry"); err != nil {
				return nil, err
			}
		}
		if e := f.Directives["entry"]; e != "" {
			m := ft
			if m.Kind == Optional {
				m = m.Elem
			}
			if m.Kind != Map {
				return nil, p.errAt(name.line, "#go:entry applies to a map or an optional map, not %s", ft)
			}
			m.Entry = e
		}
		typ.Fields = append(typ.Fields, f)
	}
	p.next()
	if len(typ.Fields) == 0 {
		return nil, p.errAt(line, "a struct needs at least one field")
	}
	return typ, nil
}

func (p *parser) unionBody(line int) (*Type, error) {
	typ := &Type{Kind: Union, Line: line}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	if p.peek().text == "|" {
		p.next()
	}
	tags := map[uint64]int{}
	var next uint64
	for {
		mt, err := p.typ()
		if err != nil {
			return nil, err
		}
		m := &Member{Type: mt, Tag: next}
		if p.peek().text == "=" {
			p.next()
			n, t, err := p.number()
			if err != nil {
				return nil, err
			}
			if len(typ.Members) > 0 && n <= typ.Members[len(typ.Members)-1].Tag {
				return nil, p.errAt(t.line, "union tag %d is not above the previous member's %d", n, typ.Members[len(typ.Members)-1].Tag)
			}
			m.Tag = n
		}
		if prev, dup := tags[m.Tag]; dup {
			return nil, p.errAt(mt.Line, "union tag %d is already used on line %d", m.Tag, prev)
		}
		tags[m.Tag] = mt.Line
		next = m.Tag + 1
		typ.Members = append(typ.Members, m)
		t := p.next()
		if t.text == "|" {
			if p.peek().text == "}" {
				p.next()
				break
			}
			continue
		}
		if t.text == "}" {
			break
		}
		return nil, p.errAt(t.line, "expected \"|\" or \"}\" in union, found %s", describe(t))
	}
	return typ, nil
}

func (p *parser) enumBody(line int) (*Type, error) {
	typ := &Type{Kind: Enum, Line: line}
	if _, err := p.expect("{"); err != nil {
		return nil, err
	}
	names := map[string]int{}
	values := map[uint64]string{}
	var next uint64
	for p.peek().text != "}" {
		t := p.next()
		if t.text == "" || !unicode.IsUpper(rune(t.text[0])) || strings.ToUpper(t.text) != t.text {
			return nil, p.errAt(t.line, "expected an enum value name (upper case, digits and _) or \"}\", found %s", describe(t))
		}
		if prev, dup := names[t.text]; dup {
			return nil, p.errAt(t.line, "enum value %s is already declared on line %d", t.text, prev)
		}
		names[t.text] = t.line
		v := &EnumValue{Name: t.text, Value: next, Line: t.line, Doc: p.doc(t.line), Comment: p.trailing(t.line)}
		if p.peek().text == "=" {
			p.next()
			n, _, err := p.number()
			if err != nil {
				return nil, err
			}
			v.Value = n
		}
		if prev, dup := values[v.Value]; dup {
			return nil, p.errAt(t.line, "enum value %d is already %s", v.Value, prev)
		}
		values[v.Value] = v.Name
		next = v.Value + 1
		typ.Values = append(typ.Values, v)
	}
	p.next()
	if len(typ.Values) == 0 {
		return nil, p.errAt(line, "an enum needs at least one value")
	}
	return typ, nil
}

// check resolves names and checks the rules the grammar does not express.
func check(s *Schema) error {
	var walk func(t *Type, top bool) error
	walk = func(t *Type, top bool) error {
		errAt := func(format string, args ...any) error {
			return &Error{s.File, t.Line, fmt.Sprintf(format, args...)}
		}
		switch t.Kind {
		case Void:
			if !top {
				return errAt("void is only a union member or a user type")
			}
		case Ref:
			if s.names[t.Name] == nil {
				return errAt("undefined type %s", t.Name)
			}
		case Optional, List:
			if t.Elem.Kind == Void {
				return errAt("%s of void", t)
			}
			return walk(t.Elem, false)
		case Map:
			k := t.Key
			if k.Kind == Ref {
				if d := s.names[k.Name]; d != nil && d.Type.Kind == Enum {
					k = d.Type
				}
			}
			if !(k.Kind == Prim && k.Prim != "data" && k.Prim != "f32" && k.Prim != "f64" || k.Kind == Enum) {
				return errAt("map key %s is not a primitive type other than f32, f64 and data", t.Key)
			}
			if err := walk(t.Key, false); err != nil {
				return err
			}
			return walk(t.Elem, false)
		case Struct:
			for _, f := range t.Fields {
				if err := walk(f.Type, false); err != nil {
					return err
				}
			}
		case Union:
			for _, m := range t.Members {
				if err := walk(m.Type, true); err != nil {
					return err
				}
			}
		}
		return nil
	}
	for _, d := range s.Types {
		if err := walk(d.Type, true); err != nil {
			return err
		}
	}
	return nil
}
