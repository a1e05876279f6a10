package apihttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/rerr"
)

// MaxBodySize bounds a JSON request body (the guard's default http_max_request_body_size).
const MaxBodySize = 20 << 20

// BindJSON decodes the request body, a JSON object, into the struct *dst, strictly: an unknown
// field, a value of the wrong type, a body that is not one JSON object, or one larger than
// MaxBodySize is a 400 api.bad_request (413 guard.invalid_request_body for the size) that
// names the field where it can. Checking required fields is the handler's job.
func BindJSON(c echo.Context, dst any) error {
	r := c.Request()
	body, err := io.ReadAll(http.MaxBytesReader(c.Response(), r.Body, MaxBodySize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return rerr.GuardInvalidRequestBody().WithCause(err)
		}
		return rerr.BadRequest("", "reading the body failed").WithCause(err)
	}
	return DecodeJSON(body, dst)
}

// DecodeJSON is BindJSON on a body already read.
func DecodeJSON(body []byte, dst any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return rerr.BadRequest("", "the body must be a JSON object")
	}
	// encoding/json would take invalid UTF-8, replacing it: JSON text is UTF-8 (RFC 8259 §8.1).
	if !utf8.Valid(body) {
		return rerr.BadRequest("", "the body is not UTF-8")
	}
	// This also checks that the body is exactly one JSON value. It names an unknown
	// top-level field exactly; the decoder below catches deeper ones.
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return jsonError(err)
	}
	if t := reflect.TypeOf(dst); t != nil && t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct {
		known := jsonFields(t.Elem())
		var unknown []string
		for k := range top {
			if !known[k] {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			sort.Strings(unknown)
			return rerr.BadRequest(unknown[0], "unknown field")
		}
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(dst); err != nil {
		return jsonError(err)
	}
	return nil
}

func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return rerr.BadRequest(te.Field, fmt.Sprintf("want %s, got JSON %s", jsonTypeName(te.Type), te.Value)).WithCause(err)
	case errors.As(err, &te):
		return rerr.BadRequest("", fmt.Sprintf("the body must be a JSON object, got JSON %s", te.Value)).WithCause(err)
	case errors.As(err, &se):
		return rerr.BadRequest("", fmt.Sprintf("the body is not valid JSON (at byte %d)", se.Offset)).WithCause(err)
	}
	// encoding/json reports an unknown nested field only as text ("json: unknown field \"x\"").
	return rerr.BadRequest("", strings.TrimPrefix(err.Error(), "json: ")).WithCause(err)
}

func jsonTypeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer in range for " + t.Kind().String()
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// jsonFields returns the JSON names of t's fields as encoding/json sees them (tags, embedded
// structs). Matching is exact; encoding/json would also accept other letter cases.
func jsonFields(t reflect.Type) map[string]bool {
	m := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			for k := range jsonFields(f.Type) {
				m[k] = true
			}
		case !f.IsExported():
		case name == "":
			m[f.Name] = true
		default:
			m[name] = true
		}
	}
	return m
}
