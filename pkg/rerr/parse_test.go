package rerr

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/rerr/internal/tmpl"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		key    string
		msg    string
		meta   string // JSON of the parsed metadata
		st     int
		bad    string // error substring when the body is rejected
	}{
		{"catalog error", 404, `{"group":"namespace","code":"not_found","message":"Namespace 'a' does not exist.","metadata":{"namespace":"a"}}`,
			"namespace.not_found", "Namespace 'a' does not exist.", `{"namespace":"a"}`, 404, ""},
		{"unknown code kept", 400, `{"group":"actor","code":"brand_new","message":"m"}`, "actor.brand_new", "m", "null", 400, ""},
		{"numbers kept exactly", 400, `{"group":"validation","code":"too_many_actor_ids","message":"m","metadata":{"max":32,"count":12345678901234567890}}`,
			"validation.too_many_actor_ids", "m", `{"count":12345678901234567890,"max":32}`, 400, ""},
		{"null metadata", 403, `{"group":"api","code":"forbidden","message":"Access denied","metadata":null}`, "api.forbidden", "Access denied", "null", 403, ""},
		{"empty metadata", 403, `{"group":"api","code":"forbidden","message":"Access denied","metadata":{}}`, "api.forbidden", "Access denied", "null", 403, ""},
		{"extra fields ignored", 401, `{"group":"api","code":"unauthorized","message":"x","extra":1}`, "api.unauthorized", "x", "null", 401, ""},
		{"status 200 replaced by catalog's", 200, `{"group":"actor","code":"not_found","message":"x"}`, "actor.not_found", "x", "null", 404, ""},
		{"status 0 unknown code", 0, `{"group":"a","code":"b","message":"x"}`, "a.b", "x", "null", 500, ""},
		{"not JSON", 500, `<html>`, "", "", "", 0, "not a JSON object"},
		{"array", 500, `[1]`, "", "", "", 0, "not a JSON object"},
		{"missing code", 500, `{"group":"a","message":"x"}`, "", "", "", 0, "lacks"},
		{"null group", 500, `{"group":null,"code":"b","message":"x"}`, "", "", "", 0, "lacks"},
		{"bad group", 500, `{"group":"A B","code":"b","message":"x"}`, "", "", "", 0, "malformed"},
		{"empty code", 500, `{"group":"a","code":"","message":"x"}`, "", "", "", 0, "malformed"},
		{"metadata not an object", 500, `{"group":"a","code":"b","message":"x","metadata":[1]}`, "", "", "", 0, "not a JSON object"},
		{"trailing garbage", 500, `{"group":"a","code":"b","message":"x"} x`, "", "", "", 0, "not a JSON object"},
		{"too large", 500, `{"group":"a","code":"b","message":"` + strings.Repeat("x", maxParse) + `"}`, "", "", "", 0, "more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := Parse(tt.status, []byte(tt.body))
			if tt.bad != "" {
				if err == nil || !strings.Contains(err.Error(), tt.bad) {
					t.Fatalf("Parse = %v, %v; want an error with %q", e, err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := json.Marshal(e.Metadata)
			if e.Key() != tt.key || e.Message != tt.msg || string(meta) != tt.meta || e.Status != tt.st {
				t.Fatalf("got %s %q %s %d", e.Key(), e.Message, meta, e.Status)
			}
		})
	}
}

// TestParseRoundTrip: what berth sends, another berth parses back to the same body and status.
func TestParseRoundTrip(t *testing.T) {
	for _, e := range []*Error{NamespaceNotFound("a"), ValidationTooManyActorIDs(1, 2), APIForbidden(), ValidationInvalidInput("<x> & y")} {
		p, err := Parse(e.Status, e.JSON())
		if err != nil || string(p.JSON()) != string(e.JSON()) || p.Status != e.Status {
			t.Errorf("round trip of %s: %v, %s", e.JSON(), err, p.JSON())
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts re-encodes to a body it parses to the same
// error.
func FuzzParse(f *testing.F) {
	f.Add(404, []byte(`{"group":"namespace","code":"not_found","message":"m","metadata":{"namespace":"a"}}`))
	f.Add(400, []byte(`{"group":"a","code":"b","message":"x","metadata":{"n":1.5e300,"l":[1,{"x":null}]}}`))
	f.Add(0, []byte(`{"group":"a","code":"b","message":"\ud800"}`))
	f.Add(500, []byte(`not json`))
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		e, err := Parse(status, body)
		if err != nil {
			return
		}
		if e.Status < 400 || e.Status > 599 || !tmpl.IsToken(e.Group) || !tmpl.IsToken(e.Code) {
			t.Fatalf("Parse accepted %+v", e)
		}
		out := e.JSON()
		back, err := Parse(e.Status, out)
		if err != nil {
			t.Fatalf("Parse(JSON()) of %q: %v", out, err)
		}
		if again := back.JSON(); string(again) != string(out) {
			t.Fatalf("not stable: %s then %s", out, again)
		}
		_ = CloseReason(e, "ray")
		_ = e.Error()
	})
}

// FuzzFill: templates never panic; text without braces is kept as is, and a lone placeholder
// becomes its value.
func FuzzFill(f *testing.F) {
	f.Add("Request is invalid: {reason}", "reason", "r")
	f.Add("{a}{", "a", "{a}")
	f.Add("{}{x}}{", "x", "")
	f.Fuzz(func(t *testing.T, tpl, k, v string) {
		got, ok := fill(tpl, map[string]any{k: v})
		switch {
		case !strings.Contains(tpl, "{") && (!ok || got != tpl):
			t.Fatalf("fill(%q) = %q, %v", tpl, got, ok)
		case tpl == "{"+k+"}" && tmpl.IsToken(k) && (!ok || got != v):
			t.Fatalf("fill(%q, %q=%q) = %q, %v", tpl, k, v, got, ok)
		}
		_ = tmpl.Placeholders(tpl)
	})
}
