package apihttp

import (
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

type listQuery struct {
	Namespace      string   `query:"namespace,required"`
	Name           *string  `query:"name"`
	RunnerIDs      []id.ID  `query:"runner_id,csv=runner_ids"`
	IncludeStopped bool     `query:"include_stopped"`
	Limit          int      `query:"limit,default=100,min=1,max=10000"`
	Cursor         *string  `query:"cursor"`
	Label          *uint16  `query:"label"`
	Names          []string `query:"runner_name,csv=runner_names"`
	Ignored        string
}

func TestDecodeQuery(t *testing.T) {
	a, b, c := id.New(1), id.New(2), id.New(3)
	name, cursor := "pool", "123"
	label := uint16(7)
	tests := []struct {
		name  string
		query string
		want  listQuery
	}{
		{"defaults", "namespace=default",
			listQuery{Namespace: "default", Limit: 100}},
		{"everything", "namespace=ns&name=pool&include_stopped=true&limit=5&cursor=123&label=7",
			listQuery{Namespace: "ns", Name: &name, IncludeStopped: true, Limit: 5, Cursor: &cursor, Label: &label}},
		{"repeated and csv merge", "namespace=ns&runner_id=" + a.String() + "&runner_id=" + b.String() + "&runner_ids=" + c.String() + ",," + a.String(),
			listQuery{Namespace: "ns", Limit: 100, RunnerIDs: []id.ID{a, b, c, a}}},
		{"csv only", "namespace=ns&runner_names=x,y&runner_name=z",
			listQuery{Namespace: "ns", Limit: 100, Names: []string{"z", "x", "y"}}},
		{"empty csv", "namespace=ns&runner_ids=",
			listQuery{Namespace: "ns", Limit: 100}},
		{"bounds", "namespace=ns&limit=10000&include_stopped=false",
			listQuery{Namespace: "ns", Limit: 10000}},
		{"empty string is a value", "namespace=",
			listQuery{Namespace: "", Limit: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := url.ParseQuery(tt.query)
			if err != nil {
				t.Fatal(err)
			}
			got := listQuery{Ignored: "keep"}
			if err := DecodeQuery(q, &got); err != nil {
				t.Fatal(err)
			}
			tt.want.Ignored = "keep"
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecodeQueryErrors(t *testing.T) {
	good := id.New(1).String()
	tests := []struct {
		query, field, reason string
	}{
		{"namespace=a&bogus=1&zzz=2", "bogus", "unknown query parameter; this endpoint takes cursor, include_stopped, label, limit, name, namespace, runner_id, runner_ids, runner_name, runner_names"},
		{"name=x", "namespace", "required"},
		{"namespace=a&namespace=b", "namespace", "given 2 times; give it once"},
		{"namespace=a&limit=0", "limit", `want an integer from 1 to 10000, got "0"`},
		{"namespace=a&limit=10001", "limit", `want an integer from 1 to 10000, got "10001"`},
		{"namespace=a&limit=ten", "limit", `want an integer from 1 to 10000, got "ten"`},
		{"namespace=a&limit=", "limit", `want an integer from 1 to 10000, got ""`},
		{"namespace=a&label=70000", "label", `want an integer from 0 to 65535, got "70000"`},
		{"namespace=a&label=-1", "label", `want an integer from 0 to 65535, got "-1"`},
		{"namespace=a&include_stopped=yes", "include_stopped", `want true or false, got "yes"`},
		{"namespace=a&include_stopped=True", "include_stopped", `want true or false, got "True"`},
		{"namespace=a&include_stopped=1", "include_stopped", `want true or false, got "1"`},
		{"namespace=a&runner_id=nope", "runner_id", "id"},
		{"namespace=a&runner_id=" + good + "&runner_ids=" + good + ",bad", "runner_ids", "id"},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tt.query)
			err := DecodeQuery(q, &listQuery{})
			e, ok := rerr.As(err)
			if !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Status != 400 {
				t.Fatalf("error = %v, want api.bad_request", err)
			}
			if e.Metadata["field"] != tt.field {
				t.Errorf("field = %v, want %q (%v)", e.Metadata["field"], tt.field, err)
			}
			if r, _ := e.Metadata["reason"].(string); !strings.HasPrefix(r, tt.field+": "+tt.reason) {
				t.Errorf("reason = %q, want prefix %q", r, tt.field+": "+tt.reason)
			}
		})
	}
}

func TestDecodeQueryBadSpecs(t *testing.T) {
	type noName struct {
		X string `query:",required"`
	}
	type csvOnScalar struct {
		X string `query:"x,csv=xs"`
	}
	type badType struct {
		X map[string]string `query:"x"`
	}
	type dup struct {
		X []string `query:"x,csv=y"`
		Y string   `query:"y"`
	}
	type badDefault struct {
		X int `query:"x,default=z"`
	}
	type outOfBoundsDefault struct {
		X int `query:"x,default=0,min=1"`
	}
	type minOnString struct {
		X string `query:"x,min=1"`
	}
	type unknownOpt struct {
		X string `query:"x,requird"`
	}
	for _, dst := range []any{&noName{}, &csvOnScalar{}, &badType{}, &dup{}, &badDefault{}, &outOfBoundsDefault{}, &minOnString{}, &unknownOpt{}, listQuery{}, new(int)} {
		err := DecodeQuery(url.Values{}, dst)
		if !rerr.Is(err, rerr.CodeCoreInternalError) {
			t.Errorf("%T: error = %v, want core.internal_error", dst, err)
		}
	}
}

func TestNoQuery(t *testing.T) {
	if err := DecodeQuery(url.Values{}, &NoQuery{}); err != nil {
		t.Fatal(err)
	}
	err := DecodeQuery(url.Values{"x": {"1"}}, &NoQuery{})
	if e, ok := rerr.As(err); !ok || e.Metadata["field"] != "x" || !strings.Contains(e.Message, "this endpoint takes no parameters") {
		t.Errorf("error = %v", err)
	}
}

func TestEncodeQueryRoundTrip(t *testing.T) {
	name := "pool"
	in := listQuery{Namespace: "ns", Name: &name, RunnerIDs: []id.ID{id.New(1), id.New(2)}, Limit: 7, Names: []string{"a"}}
	q, err := EncodeQuery(in)
	if err != nil {
		t.Fatal(err)
	}
	if q.Has("runner_ids") || q.Has("cursor") || len(q["runner_id"]) != 2 || q.Get("include_stopped") != "false" {
		t.Errorf("encoded %v", q)
	}
	var out listQuery
	if err := DecodeQuery(q, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip: got %+v, want %+v", out, in)
	}
}

func FuzzDecodeQuery(f *testing.F) {
	f.Add("namespace=a&runner_ids=x,y&limit=5")
	f.Add("namespace=a&runner_id=" + id.New(1).String())
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		var out listQuery
		if err := DecodeQuery(q, &out); err != nil {
			if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) {
				t.Fatalf("error %v is not api.bad_request", err)
			}
			return
		}
		if out.Limit < 1 || out.Limit > 10000 {
			t.Fatalf("limit %d out of bounds", out.Limit)
		}
	})
}

func TestBindQueryMalformed(t *testing.T) {
	e, _ := newTestEcho(t, Options{})
	e.GET("/q", func(c echo.Context) error {
		var q listQuery
		if err := BindQuery(c, &q); err != nil {
			return err
		}
		return c.JSON(http.StatusOK, q.Namespace)
	})
	for _, target := range []string{"/q?namespace=a&x=%zz", "/q?namespace=a;limit=5"} {
		r := do(t, e, "GET", target)
		if r.status != 400 || !strings.Contains(r.body, "malformed query string") {
			t.Errorf("%s: %d %s", target, r.status, r.body)
		}
	}
	if r := do(t, e, "GET", "/q?namespace=a%2Fb"); r.status != 200 || r.body != `"a/b"`+"\n" {
		t.Errorf("escaped value: %d %q", r.status, r.body)
	}
}
