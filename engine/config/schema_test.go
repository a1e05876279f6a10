package config

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// schemaKeys lists every key of t under path: leaves with their kind, and sections (structs,
// and the entries of maps, named "x").
func schemaKeys(t reflect.Type, path []string, leaf func(path string, k reflect.Kind), section func(path string)) {
	section(strings.Join(path, "."))
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := append(append([]string(nil), path...), name)
		switch ft := t.Field(i).Type; ft.Kind() {
		case reflect.Struct:
			schemaKeys(ft, p, leaf, section)
		case reflect.Map:
			schemaKeys(ft.Elem(), append(p, "x"), leaf, section)
		default:
			leaf(strings.Join(p, "."), ft.Kind())
		}
	}
}

// nested turns "a.b.c" = v into {"a": {"b": {"c": v}}}.
func nested(path string, v any) map[string]any {
	parts := strings.Split(path, ".")
	m := map[string]any{parts[len(parts)-1]: v}
	for i := len(parts) - 2; i >= 0; i-- {
		m = map[string]any{parts[i]: m}
	}
	return m
}

func envName(path string) string { return "BERTH__" + strings.ReplaceAll(path, ".", "__") }

// Every key of the schema refuses a value of the wrong type, and every section an unknown
// key, each with an error that names the key and where it was set: a new key cannot be
// added without this holding for it.
func TestEveryKeyRefusesBadValues(t *testing.T) {
	leaves := 0
	schemaKeys(reflect.TypeFor[Config](), nil,
		func(path string, k reflect.Kind) {
			leaves++
			var bad any // a value no key of this kind accepts, in a file
			switch k {
			case reflect.String:
				bad = []int{1}
			case reflect.Bool:
				bad = "yes"
			default:
				bad = -1
			}
			b, _ := json.Marshal(nested(path, bad))
			_, err := Load(Sources{Files: []string{writeFile(t, "bad.json", string(b))}})
			if err == nil || !strings.Contains(err.Error(), path+": want ") || !strings.Contains(err.Error(), "bad.json:") {
				t.Errorf("%s = %s in a file: error %v, want one naming the key and the file", path, b, err)
			}
			if k == reflect.String || k == reflect.Slice {
				return // any text is a string, or a comma-separated list of them
			}
			_, err = Load(Sources{Environ: []string{envName(path) + "=not-a-value"}})
			if err == nil || !strings.Contains(err.Error(), path+": want ") || !strings.Contains(err.Error(), "(env "+envName(path)+")") {
				t.Errorf("%s=not-a-value: error %v, want one naming the key and the variable", envName(path), err)
			}
		},
		func(section string) {
			key := "no_such_key"
			if section != "" {
				key = section + "." + key
			}
			_, err := Load(Sources{Environ: []string{envName(key) + "=1"}})
			if err == nil || !strings.Contains(err.Error(), key+": unknown key; known keys in ") {
				t.Errorf("%s=1: error %v, want %q", envName(key), err, key+": unknown key")
			}
		})
	if leaves < 30 {
		t.Fatalf("only %d keys found; the walk is broken", leaves)
	}
}
