package apihttp

import (
	"encoding"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/rerr"
)

// BindQuery fills the struct *dst from the request's query string and rejects anything it does
// not describe. Each field names its parameter in a `query` tag:
//
//	type listQuery struct {
//		Namespace      string   `query:"namespace,required"`
//		Name           *string  `query:"name"`                   // nil when absent
//		RunnerIDs      []id.ID  `query:"runner_id,csv=runner_ids"` // runner_id=a&runner_id=b and runner_ids=a,b, merged
//		IncludeStopped bool     `query:"include_stopped"`        // exactly "true" or "false"
//		Limit          int      `query:"limit,default=100,min=0"`
//		Cursor         *string  `query:"cursor"`
//	}
//
// Field types: string, bool, signed and unsigned integers, any type whose pointer implements
// encoding.TextUnmarshaler (id.ID), a pointer to one of these (nil when absent) or a slice of
// them (the parameter may repeat). Options: required; default=V (used when absent); min=N and
// max=N for integers; csv=NAME, on a slice, also accepts NAME as a comma-separated list (the
// deprecated Rivet form), with empty elements skipped.
//
// Every failure is a 400 api.bad_request naming the parameter: a malformed query string (bad
// percent-encoding, a ';' separator; no parameter named), an unknown parameter, a
// non-slice parameter given twice, a value that does not parse, a missing required one. A
// malformed tag is a core.internal_error: a bug in the handler, not in the request.
func BindQuery(c echo.Context, dst any) error {
	// Parse the raw query here: url.URL.Query, and so echo, drop malformed pairs silently.
	q, err := url.ParseQuery(c.Request().URL.RawQuery)
	if err != nil {
		return rerr.BadRequest("", "malformed query string: "+err.Error()).WithCause(err)
	}
	return DecodeQuery(q, dst)
}

// DecodeQuery is BindQuery on parsed query values.
func DecodeQuery(q url.Values, dst any) error {
	v := reflect.ValueOf(dst)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		return rerr.Internal(fmt.Errorf("apihttp: BindQuery needs a pointer to a struct, got %T", dst))
	}
	spec, err := querySpecOf(v.Elem().Type())
	if err != nil {
		return rerr.Internal(err)
	}
	var unknown []string
	for name := range q {
		if _, ok := spec.byName[name]; !ok {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return rerr.BadRequest(unknown[0], "unknown query parameter; this endpoint takes "+spec.known)
	}
	out := v.Elem()
	for _, f := range spec.fields {
		if err := f.decode(q, out.Field(f.index)); err != nil {
			return err
		}
	}
	return nil
}

// EncodeQuery is the inverse of BindQuery, for forwarding a bound query to a peer: pointer
// fields are sent when set, slices as repeated parameters (never the csv form), other fields
// always (strings only when not empty).
func EncodeQuery(src any) (url.Values, error) {
	v := reflect.ValueOf(src)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, fmt.Errorf("apihttp: EncodeQuery needs a struct, got %T", src)
	}
	spec, err := querySpecOf(v.Type())
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	for _, f := range spec.fields {
		fv := v.Field(f.index)
		switch f.shape {
		case shapePointer:
			if !fv.IsNil() {
				q.Add(f.name, f.format(fv.Elem()))
			}
		case shapeSlice:
			for i := range fv.Len() {
				q.Add(f.name, f.format(fv.Index(i)))
			}
		default:
			if s := f.format(fv); s != "" || fv.Kind() != reflect.String {
				q.Add(f.name, s)
			}
		}
	}
	return q, nil
}

type shape uint8

const (
	shapeValue shape = iota
	shapePointer
	shapeSlice
)

type queryField struct {
	index    int
	name     string
	csv      string // alias accepting a comma-separated list (slices only)
	shape    shape
	elem     reflect.Type // the scalar type
	required bool
	def      *string
	min, max *int64
}

type querySpec struct {
	fields []queryField
	byName map[string]bool // every accepted parameter name, csv aliases included
	known  string          // "a, b, c" for error messages
}

var querySpecs sync.Map // reflect.Type → *querySpec or error

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func querySpecOf(t reflect.Type) (*querySpec, error) {
	if s, ok := querySpecs.Load(t); ok {
		if err, isErr := s.(error); isErr {
			return nil, err
		}
		return s.(*querySpec), nil
	}
	spec, err := buildQuerySpec(t)
	if err != nil {
		querySpecs.Store(t, err)
		return nil, err
	}
	querySpecs.Store(t, spec)
	return spec, nil
}

func buildQuerySpec(t reflect.Type) (*querySpec, error) {
	spec := &querySpec{byName: map[string]bool{}}
	for i := range t.NumField() {
		sf := t.Field(i)
		tag, ok := sf.Tag.Lookup("query")
		if !ok || tag == "-" {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("apihttp: %s.%s: query tag %q: %s", t.Name(), sf.Name, tag, fmt.Sprintf(format, args...))
		}
		parts := strings.Split(tag, ",")
		f := queryField{index: i, name: parts[0], elem: sf.Type}
		if f.name == "" {
			return nil, bad("no parameter name")
		}
		switch sf.Type.Kind() {
		case reflect.Pointer:
			f.shape, f.elem = shapePointer, sf.Type.Elem()
		case reflect.Slice:
			f.shape, f.elem = shapeSlice, sf.Type.Elem()
		}
		if !isScalar(f.elem) {
			return nil, bad("unsupported type %s", sf.Type)
		}
		for _, opt := range parts[1:] {
			k, val, _ := strings.Cut(opt, "=")
			switch k {
			case "required":
				f.required = true
			case "csv":
				if f.shape != shapeSlice || val == "" {
					return nil, bad("csv=NAME needs a slice field and a name")
				}
				f.csv = val
			case "default":
				if f.shape == shapeSlice {
					return nil, bad("a slice has no default")
				}
				f.def = &val
			case "min", "max":
				n, err := strconv.ParseInt(val, 10, 64)
				if err != nil || !isInt(f.elem) {
					return nil, bad("%s needs an integer field and value", k)
				}
				if k == "min" {
					f.min = &n
				} else {
					f.max = &n
				}
			default:
				return nil, bad("unknown option %q", k)
			}
		}
		for _, n := range []string{f.name, f.csv} {
			if n == "" {
				continue
			}
			if spec.byName[n] {
				return nil, bad("parameter %q named twice", n)
			}
			spec.byName[n] = true
		}
		if f.def != nil { // the default must itself be valid
			if err := f.parse(*f.def, f.name, reflect.New(f.elem).Elem()); err != nil {
				return nil, bad("default: %v", err)
			}
		}
		spec.fields = append(spec.fields, f)
	}
	names := make([]string, 0, len(spec.byName))
	for n := range spec.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	spec.known = "no parameters"
	if len(names) > 0 {
		spec.known = strings.Join(names, ", ")
	}
	return spec, nil
}

func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return true
	}
	return false
}

func isScalar(t reflect.Type) bool {
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return true
	}
	return t.Kind() == reflect.String || t.Kind() == reflect.Bool || isInt(t)
}

func (f *queryField) decode(q url.Values, v reflect.Value) error {
	vals := q[f.name]
	switch f.shape {
	case shapeSlice:
		type item struct{ param, text string }
		var items []item
		for _, s := range vals {
			items = append(items, item{f.name, s})
		}
		if f.csv != "" {
			for _, s := range q[f.csv] {
				for e := range strings.SplitSeq(s, ",") {
					if e = strings.TrimSpace(e); e != "" {
						items = append(items, item{f.csv, e})
					}
				}
			}
		}
		if len(items) == 0 {
			if f.required {
				return rerr.BadRequest(f.name, "required")
			}
			v.SetZero()
			return nil
		}
		out := reflect.MakeSlice(v.Type(), len(items), len(items))
		for i, it := range items {
			if err := f.parse(it.text, it.param, out.Index(i)); err != nil {
				return err
			}
		}
		v.Set(out)
		return nil
	}
	var text string
	switch {
	case len(vals) > 1:
		return rerr.BadRequest(f.name, fmt.Sprintf("given %d times; give it once", len(vals)))
	case len(vals) == 1:
		text = vals[0]
	case f.required:
		return rerr.BadRequest(f.name, "required")
	case f.def != nil:
		text = *f.def
	default:
		v.SetZero()
		return nil
	}
	if f.shape == shapePointer {
		p := reflect.New(f.elem)
		if err := f.parse(text, f.name, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
		return nil
	}
	return f.parse(text, f.name, v)
}

// parse writes text into the scalar v; param names the parameter in errors.
func (f *queryField) parse(text, param string, v reflect.Value) error {
	if tu, ok := v.Addr().Interface().(encoding.TextUnmarshaler); ok {
		if err := tu.UnmarshalText([]byte(text)); err != nil {
			return rerr.BadRequest(param, err.Error())
		}
		return nil
	}
	switch k := v.Kind(); {
	case k == reflect.String:
		v.SetString(text)
	case k == reflect.Bool:
		if text != "true" && text != "false" {
			return rerr.BadRequest(param, fmt.Sprintf("want true or false, got %q", text))
		}
		v.SetBool(text == "true")
	case v.CanInt():
		lo, hi := int64(-1)<<(v.Type().Bits()-1), int64(1)<<(v.Type().Bits()-1)-1
		lo, hi = f.bounds(lo, hi)
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n < lo || n > hi {
			return rerr.BadRequest(param, fmt.Sprintf("want an integer from %d to %d, got %q", lo, hi, text))
		}
		v.SetInt(n)
	case v.CanUint():
		hi := uint64(math.MaxUint64) >> (64 - v.Type().Bits())
		lo := uint64(0)
		if f.min != nil && *f.min > 0 {
			lo = uint64(*f.min)
		}
		if f.max != nil && *f.max >= 0 && uint64(*f.max) < hi {
			hi = uint64(*f.max)
		}
		n, err := strconv.ParseUint(text, 10, 64)
		if err != nil || n < lo || n > hi {
			return rerr.BadRequest(param, fmt.Sprintf("want an integer from %d to %d, got %q", lo, hi, text))
		}
		v.SetUint(n)
	}
	return nil
}

func (f *queryField) bounds(lo, hi int64) (int64, int64) {
	if f.min != nil && *f.min > lo {
		lo = *f.min
	}
	if f.max != nil && *f.max < hi {
		hi = *f.max
	}
	return lo, hi
}

// format writes the scalar v as text.
func (f *queryField) format(v reflect.Value) string {
	if m, ok := v.Interface().(encoding.TextMarshaler); ok {
		b, err := m.MarshalText()
		if err == nil {
			return string(b)
		}
	}
	switch {
	case v.Kind() == reflect.String:
		return v.String()
	case v.Kind() == reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case v.CanInt():
		return strconv.FormatInt(v.Int(), 10)
	case v.CanUint():
		return strconv.FormatUint(v.Uint(), 10)
	}
	return fmt.Sprint(v.Interface())
}
