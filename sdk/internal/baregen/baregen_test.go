package baregen

import (
	"strings"
	"testing"
)

// TestParseErrors checks that each schema error names its line.
func TestParseErrors(t *testing.T) {
	for _, tt := range []struct {
		src, want string
	}{
		{"type A u8\ntype B struct {\n  x u8\n}", "s.bare:3: expected \":\", found \"u8\""},
		{"type A u8\ntype A str", "s.bare:2: type A is already declared on line 1"},
		{"type a u8", "s.bare:1: expected a user type name"},
		{"type A struct {\n  x: u8\n  x: u16\n}", "s.bare:3: field x is already declared on line 2"},
		{"type A struct {\n  X: u8\n}", "s.bare:2: expected a field name"},
		{"type A struct {}", "s.bare:1: a struct needs at least one field"},
		{"\n\ntype A struct {\n  x: B\n}", "s.bare:4: undefined type B"},
		{"type A union {\n  B |\n  C = 0\n}\ntype B void\ntype C void", "s.bare:3: union tag 0 is not above the previous member's 0"},
		{"type A union { B = 1 | C = 1 }\ntype B void\ntype C void", "s.bare:1: union tag 1 is not above"},
		{"type A union { B C }\ntype B void", "s.bare:1: expected \"|\" or \"}\" in union, found \"C\""},
		{"type A enum {\n  X\n  Y = 0\n}", "s.bare:3: enum value 0 is already X"},
		{"type A enum {\n  X\n  X\n}", "s.bare:3: enum value X is already declared on line 2"},
		{"type A enum {\n  lower\n}", "s.bare:2: expected an enum value name"},
		{"type A enum {}", "s.bare:1: an enum needs at least one value"},
		{"type A struct {\n  x: void\n}", "s.bare:2: void is only a union member or a user type"},
		{"type A struct {\n  x: list<void>\n}", "s.bare:2: list<void> of void"},
		{"type A map<data><str>", "s.bare:1: map key data is not a primitive type"},
		{"type A map<f64><str>", "s.bare:1: map key f64 is not a primitive type"},
		{"type A data[0]", "s.bare:1: length 0 is out of range"},
		{"type A data[", "s.bare:1: expected a number, found end of file"},
		{"type A optional<u8", "s.bare:1: expected \">\", found end of file"},
		{"type A u8 $", "s.bare:1: unexpected character '$'"},
		{"type A struct {\n  x: u8 #go:entry E\n}", "s.bare:2: #go:entry applies to a map or an optional map, not u8"},
		{"type A struct {\n  x: u8 #go:bogus 1\n}", "s.bare:2: unknown or misplaced directive #go:bogus"},
		{"type A u8 #go:prefix P", "s.bare:1: unknown or misplaced directive #go:prefix"},
		{"type A enum { #go:type\n  X\n}", "s.bare:1: directive #go:type needs an argument"},
		{"#go:type u8\ntype A u8", "s.bare:1: directive #go:type u8 is not on the line"},
		{"struct A {}", "s.bare:1: expected a type declaration"},
	} {
		_, err := Parse("s.bare", tt.src)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) = %v, want %q", tt.src, err, tt.want)
		}
	}
}

func TestParse(t *testing.T) {
	s, err := Parse("s.bare", `# A doc.
# Second line.
type A struct {
  # X doc.
  xId: data<4> # legacy fixed data
  y: list<str>[2]
  z: map<str><struct { v: u8 }> #go:entry E
}

type E struct { k: str  v: u8 }

enum Old {
  ONE
  TWO = 5 # two
}

type U union { | A | Old = 9 | }
`)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Lookup("A")
	if strings.Join(a.Doc, "|") != "A doc.|Second line." || a.Line != 3 {
		t.Errorf("A: doc %q, line %d", a.Doc, a.Line)
	}
	f := a.Type.Fields
	if f[0].Type.Kind != Fixed || f[0].Type.Len != 4 || f[0].Comment != "legacy fixed data" || strings.Join(f[0].Doc, "") != "X doc." {
		t.Errorf("field xId: %+v", f[0])
	}
	if f[1].Type.Kind != List || f[1].Type.Len != 2 || f[2].Type.Entry != "E" || f[2].Type.Elem.Kind != Struct {
		t.Errorf("fields y, z: %+v %+v", f[1].Type, f[2].Type)
	}
	if v := s.Lookup("Old").Type.Values; len(v) != 2 || v[1].Value != 5 || v[1].Comment != "two" {
		t.Errorf("enum Old: %+v", v)
	}
	if m := s.Lookup("U").Type.Members; len(m) != 2 || m[0].Tag != 0 || m[1].Tag != 9 {
		t.Errorf("union U: %+v", m)
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{
		"actorId": "ActorID", "sql": "SQL", "lastInsertRowId": "LastInsertRowID", "ts": "Ts",
		"namespaceId": "NamespaceID", "headTxid": "HeadTxid", "x": "X",
	} {
		if got := fieldName(in); got != want {
			t.Errorf("fieldName(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{"OK": "OK", "ERROR": "Error", "SLEEP_INTENT": "SleepIntent", "V2": "V2"} {
		if got := enumValueName(in); got != want {
			t.Errorf("enumValueName(%s) = %s, want %s", in, got, want)
		}
	}
	if got := human("ActorName"); got != "actor name" {
		t.Errorf("human(ActorName) = %q", got)
	}
}

// TestGenerateErrors checks the errors of the Go mapping and of merging versions.
func TestGenerateErrors(t *testing.T) {
	one := func(src string) []Source { return []Source{{File: "s.bare", Text: src}} }
	two := func(v1, v2 string) []Source {
		return []Source{{Version: 1, File: "v1.bare", Text: v1}, {Version: 2, File: "v2.bare", Text: v2}}
	}
	for _, tt := range []struct {
		name string
		srcs []Source
		want string
	}{
		{"anonymous struct", one("type A struct {\n  x: list<struct { y: u8 }>\n}"), "anonymous struct has no Go type name"},
		{"anonymous union", one("type A struct {\n  x: union { B }\n}\ntype B void"), "anonymous union has no Go type name"},
		{"primitive member", one("type A union { str }"), "member str must be a user type"},
		{"union member", one("type A union { B }\ntype B union { C }\ntype C void"), "member B is a union"},
		{"void field", one("type A struct {\n  x: B\n}\ntype B void"), "void type B is only a union member"},
		{"no entry type", one("type A map<str><u8> #go:entry E"), "#go:entry E: no struct type of that name"},
		{"entry key", one("type A map<str><u8> #go:entry E\ntype E struct { k: u8  v: u8 }"), "its first field has type u8, the map key str"},
		{"entry value", one("type A map<str><u8> #go:entry E\ntype E struct { k: str  v: u16 }"), "want two fields, the key (str) and the value (u8)"},
		{"entry struct value", one("type A map<str><B> #go:entry E\ntype B struct { x: u8 }\ntype E struct { k: str  y: u8 }"), "field y does not match the value's field x u8"},
		{"bool map", one("type A map<bool><u8>"), "needs #go:entry (Go cannot sort bool keys)"},
		{"helper name", one("type A list<u8>\ntype ListU8 str"), "s.bare:2: type ListU8 has the name of the codec helper of list<u8>"},
		{"versions", []Source{{Version: 2, Text: "type A u8"}, {Version: 1, Text: "type A u8"}}, "versions must increase"},
		{"field removed", two("type A struct {\n  x: u8\n  y: u8\n}", "type A struct {\n  x: u8\n}"), "v1.bare:1: field A.y of v1 is missing from v2"},
		{"field reordered", two("type A struct {\n  y: u8\n  x: u8\n}", "type A struct {\n  x: u8\n  y: u8\n}"), "field A.x of v1 is missing from v2, or out of order"},
		{"field retyped", two("type A struct {\n  x: u8\n}", "type A struct {\n  x: u16\n}"), "field A.x changes its type between versions"},
		{"kind changed", two("type A u8", "type A struct {\n  x: u8\n}"), "type A is a primitive in one version and a struct in another"},
		{"enum changed", two("type A enum { X }", "type A enum { X Y }"), "type A differs between versions"},
	} {
		_, err := Generate(Config{Package: "p", Sources: tt.srcs})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestGenerateVersions checks the version conditions of the generated code.
func TestGenerateVersions(t *testing.T) {
	src, err := Generate(Config{Package: "p", Sources: []Source{
		{Version: 1, File: "v1.bare", Text: "type A struct {\n  x: u8\n  old: u8\n}\ntype R union { A | B }\ntype B void"},
		{Version: 2, File: "v2.bare", Text: "type A struct {\n  x: u8\n  old: u8\n  y: u8\n}\ntype R union { A | B }\ntype B void"},
		{Version: 3, File: "v3.bare", Text: "type A struct {\n  x: u8\n  old: u8\n  y: u8\n  z: u8\n}\ntype R union { A | C | B }\ntype B void\ntype C void"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"// Code generated by baregen from v1.bare, v2.bare, v3.bare; DO NOT EDIT.",
		"Y   uint8 // (since v2)",
		"if v >= 2 {\n\t\tm.Y = r.U8()\n\t}\n\tif v >= 3 {\n\t\tm.Z = r.U8()",
		"func readR(r *bare.Reader, v int) R {",
		"case 1, 2:\n\t\tswitch tag {\n\t\tcase 0:\n\t\t\treturn readA(r, v)\n\t\tcase 1:\n\t\t\treturn B{}",
		"default: // v3",
		`w.Failf("C needs protocol v3 or later, not v%d", v)`,
		"// Members: A (tag 0), C (tag 1 in v3), B (tag 2 in v3; tag 1 in v1, v2).",
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("output lacks %q:\n%s", want, src)
		}
	}
}
