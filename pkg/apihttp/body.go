package apihttp

import (
	"bytes"
	"cmp"
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

// MaxBodySize bounds a JSON request body on any endpoint (the guard's default
// http_max_request_body_size); BodyLimits bound each endpoint's lower.
const MaxBodySize = 20 << 20

// Default body limits of BodyLimits: Large is Rivet's (its HTTP framework's default), Small
// far above what a body of a few short fields needs.
const (
	DefaultLargeBody = 2 << 20
	DefaultSmallBody = 64 << 10
)

// BodyLimits bound REST request bodies by endpoint (guard.max_api_body_bytes and
// guard.max_api_small_body_bytes): Large on the endpoints that carry data (an actor's input,
// a runner config's metadata), Small on those whose body holds a few short fields. A zero
// field takes its default; none may exceed MaxBodySize.
type BodyLimits struct {
	Large, Small int64
}

// LargeBody returns the route middleware of l.Large (MaxBody).
func (l BodyLimits) LargeBody() echo.MiddlewareFunc {
	return MaxBody(cmp.Or(l.Large, DefaultLargeBody))
}

// SmallBody returns the route middleware of l.Small (MaxBody).
func (l BodyLimits) SmallBody() echo.MiddlewareFunc {
	return MaxBody(cmp.Or(l.Small, DefaultSmallBody))
}

// Times returns l with both limits multiplied by f, at most MaxBodySize.
func (l BodyLimits) Times(f int64) BodyLimits {
	return BodyLimits{
		Large: min(cmp.Or(l.Large, DefaultLargeBody)*f, MaxBodySize),
		Small: min(cmp.Or(l.Small, DefaultSmallBody)*f, MaxBodySize),
	}
}

// MaxBody is the route middleware that bounds a request body to n bytes: a Content-Length
// over n is refused at once, and a body that grows past n as it is read (BindJSON) fails
// there, in both cases with 413 guard.invalid_request_body; nothing past n is read into
// memory. It runs after the token check.
func MaxBody(n int64) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if r.ContentLength > n {
				return rerr.GuardInvalidRequestBody()
			}
			r.Body = http.MaxBytesReader(c.Response(), r.Body, n)
			return next(c)
		}
	}
}

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
