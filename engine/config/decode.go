package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// FieldError is one bad configuration key or value. Load returns every FieldError it finds,
// joined (errors.Join); errors.As finds the first.
type FieldError struct {
	Path   string // dotted key, e.g. "topology.datacenters.dc2.peer_url"
	Reason string // what is wrong, e.g. `invalid URL "htp//x"`
	Source string // where the value was set ("berth.yaml:7:14", "env BERTH__guard__port"); may be empty
}

func (e *FieldError) Error() string {
	if e.Source == "" {
		return e.Path + ": " + e.Reason
	}
	return e.Path + ": " + e.Reason + " (" + e.Source + ")"
}

// decoder writes a tree into a Go value through its json tags, collecting FieldErrors.
type decoder struct {
	errs []*FieldError
}

func (d *decoder) fail(path []string, n *node, format string, args ...any) {
	d.errs = append(d.errs, &FieldError{Path: strings.Join(path, "."), Reason: fmt.Sprintf(format, args...), Source: n.src})
}

// decode writes n into v. A null leaves v as it was, so that defaults survive "key:" in YAML.
func (d *decoder) decode(path []string, n *node, v reflect.Value) {
	if n.kind == kindNull {
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(path, n, v)
	case reflect.Map:
		d.decodeMap(path, n, v)
	case reflect.String:
		switch {
		case n.kind != kindScalar:
			d.fail(path, n, "want a string, got %s", n.describe())
		case n.typ != typString && n.typ != typText:
			d.fail(path, n, "want a string, got %s (quote it)", n.describe())
		default:
			v.SetString(n.text)
		}
	case reflect.Bool:
		if n.kind != kindScalar || (n.typ != typBool && n.typ != typText) || (n.text != "true" && n.text != "false") {
			d.fail(path, n, "want true or false, got %s", n.describe())
			return
		}
		v.SetBool(n.text == "true")
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		maxv := uint64(math.MaxUint64) >> (64 - v.Type().Bits())
		if n.kind != kindScalar || (n.typ != typNumber && n.typ != typText) {
			d.fail(path, n, "want an integer from 0 to %d, got %s", maxv, n.describe())
			return
		}
		u, err := strconv.ParseUint(n.text, 10, v.Type().Bits())
		if err != nil {
			d.fail(path, n, "want an integer from 0 to %d, got %s", maxv, n.describe())
			return
		}
		v.SetUint(u)
	case reflect.Slice:
		d.decodeStrings(path, n, v)
	default:
		// Only the kinds above appear in Config; a new field of another kind needs a case here.
		d.fail(path, n, "cannot decode into Go type %s", v.Type())
	}
}

func (d *decoder) decodeStruct(path []string, n *node, v reflect.Value) {
	if n.kind != kindMap {
		d.fail(path, n, "want a section (a mapping of keys), got %s", n.describe())
		return
	}
	fields := fieldsOf(v.Type())
	for _, k := range n.keys {
		i, ok := fields[k]
		if !ok {
			d.fail(append(path, k), n.m[k], "unknown key; known keys in %s are %s", sectionName(path), knownKeys(fields))
			continue
		}
		d.decode(append(path, k), n.m[k], v.Field(i))
	}
}

func (d *decoder) decodeMap(path []string, n *node, v reflect.Value) {
	if n.kind != kindMap {
		d.fail(path, n, "want a mapping of names, got %s", n.describe())
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for _, k := range n.keys {
		elem := reflect.New(v.Type().Elem()).Elem()
		if old := v.MapIndex(reflect.ValueOf(k)); old.IsValid() {
			elem.Set(old)
		}
		d.decode(append(path, k), n.m[k], elem)
		v.SetMapIndex(reflect.ValueOf(k), elem)
	}
}

// decodeStrings writes a list of strings: a list in a file, or comma-separated text from the
// environment or a flag ("10.0.0.0/8, 192.168.1.1").
func (d *decoder) decodeStrings(path []string, n *node, v reflect.Value) {
	if v.Type().Elem().Kind() != reflect.String {
		d.fail(path, n, "cannot decode into Go type %s", v.Type())
		return
	}
	var items []string
	switch {
	case n.kind == kindList:
		for i, e := range n.list {
			if e.kind != kindScalar || e.typ != typString && e.typ != typText {
				d.fail(append(path, strconv.Itoa(i)), e, "want a string, got %s", e.describe())
				continue
			}
			items = append(items, e.text)
		}
	case n.kind == kindScalar && n.typ == typText:
		for item := range strings.SplitSeq(n.text, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	default:
		d.fail(path, n, "want a list of strings, got %s", n.describe())
		return
	}
	v.Set(reflect.ValueOf(items).Convert(v.Type()))
}

// fieldsOf maps each json key of struct type t to its field index.
func fieldsOf(t reflect.Type) map[string]int {
	m := make(map[string]int, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			m[name] = i
		}
	}
	return m
}

func knownKeys(fields map[string]int) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

func sectionName(path []string) string {
	if len(path) == 0 {
		return "the top level"
	}
	return strings.Join(path, ".")
}
