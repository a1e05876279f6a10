package apihttp

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/pkg/rerr"
)

type createBody struct {
	Name        string `json:"name"`
	DisplayName string `json:"display_name"`
	Slots       uint16 `json:"slots,omitempty"`
	Nested      *struct {
		URL string `json:"url"`
	} `json:"nested,omitempty"`
}

func TestDecodeJSON(t *testing.T) {
	var b createBody
	if err := DecodeJSON([]byte(`{"name":"a","display_name":"A","slots":3,"nested":{"url":"u"}}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.Name != "a" || b.DisplayName != "A" || b.Slots != 3 || b.Nested.URL != "u" {
		t.Errorf("got %+v", b)
	}
	tests := []struct {
		body, field, reason string
	}{
		{`{"name":"a","bogus":1}`, "bogus", "unknown field"},
		{`{"name":"a","Name":"b"}`, "Name", "unknown field"},
		{`{"name":1}`, "name", "want a string, got JSON number"},
		{`{"slots":70000}`, "slots", "want an integer in range for uint16, got JSON number 70000"},
		{`{"nested":{"url":"u","x":1}}`, "", `unknown field "x"`},
		{`{"name":`, "", "the body is not valid JSON (at byte 8)"},
		{`{"name":"a"}{}`, "", "the body is not valid JSON (at byte 13)"},
		{`{"name" "a"}`, "", "the body is not valid JSON"},
		{``, "", "the body must be a JSON object"},
		{`[]`, "", "the body must be a JSON object, got JSON array"},
		{"{\"name\":\"\xff\"}", "", "the body is not UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.body, func(t *testing.T) {
			err := DecodeJSON([]byte(tt.body), &createBody{})
			e, ok := rerr.As(err)
			if !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) {
				t.Fatalf("error = %v, want api.bad_request", err)
			}
			field, _ := e.Metadata["field"].(string)
			reason, _ := e.Metadata["reason"].(string)
			if field != tt.field || !strings.Contains(reason, tt.reason) {
				t.Errorf("field %q reason %q, want %q and %q", field, reason, tt.field, tt.reason)
			}
		})
	}
}

func TestBindJSONTooLarge(t *testing.T) {
	e := echo.New()
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"name":"`+strings.Repeat("a", MaxBodySize)+`"}`))
	c := e.NewContext(req, httptest.NewRecorder())
	err := BindJSON(c, &createBody{})
	if !rerr.Is(err, rerr.CodeGuardInvalidRequestBody) || rerr.HTTPStatus(err) != 413 {
		t.Errorf("error = %v", err)
	}
}

func FuzzDecodeJSON(f *testing.F) {
	f.Add([]byte(`{"name":"a","display_name":"A","slots":3,"nested":{"url":"u"}}`))
	f.Add([]byte(`{"name":1}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		err := DecodeJSON(body, &createBody{})
		if err != nil && !rerr.Is(err, rerr.CodeAPIBadRequest) {
			t.Fatalf("error %v is not api.bad_request", err)
		}
	})
}

// Times scales both bounds, defaults included, to at most MaxBodySize (api-peer's bounds).
func TestBodyLimitsTimes(t *testing.T) {
	if got := (BodyLimits{Large: 4 << 20, Small: 1024}).Times(6); got.Large != MaxBodySize || got.Small != 6144 {
		t.Fatalf("Times(6) = %+v", got)
	}
	if got := (BodyLimits{}).Times(6); got.Large != 6*DefaultLargeBody || got.Small != 6*DefaultSmallBody {
		t.Fatalf("defaults Times(6) = %+v", got)
	}
}
