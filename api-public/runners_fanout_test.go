package apipublic

import (
	"encoding/json"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

func TestRawRunner(t *testing.T) {
	rid := id.New(3)
	for _, tc := range []struct {
		body    string
		wantErr bool
	}{
		{`{"runner_id":"` + rid.String() + `","name":"a\"b","create_ts":42,"metadata":{"create_ts":1}}`, false},
		{`{"create_ts":42,"runner_id":"` + rid.String() + `"}`, false},
		{`{"runner_id":"` + rid.String() + `","create_ts":4.2e1}`, true},
		{`{"runner_id":"nope","create_ts":42}`, true},
	} {
		var r rawRunner
		err := json.Unmarshal([]byte(tc.body), &r)
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: accepted", tc.body)
			}
			continue
		}
		if err != nil || r.id != rid || r.createTs != 42 || string(r.raw) != tc.body {
			t.Errorf("%s: %+v %v", tc.body, r, err)
		}
	}
	var e rawEnvoy
	body := `{"envoy_key":"k-1","create_ts":7,"metadata":{"envoy_key":"x"}}`
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.key != "k-1" || e.createTs != 7 || string(e.raw) != body {
		t.Errorf("envoy: %+v %v", e, err)
	}
}

func TestPeerPage(t *testing.T) {
	rid := id.New(2)
	r := `{"runner_id":"` + rid.String() + `","create_ts":9}`
	for _, tc := range []struct {
		body    string
		runners int
		cursor  string
	}{
		{`{"runners":[` + r + `,` + r + `],"pagination":{"cursor":"c1"}}`, 2, "c1"},
		{` {"pagination" : {"cursor":null}, "runners" : [ ` + r + ` ] } `, 1, ""},
		{`{"runners":[],"pagination":{"cursor":null}}`, 0, ""},
		{`{"r\u0075nners":[` + r + `],"pagination":{"cursor":"c2"}}`, 1, "c2"}, // an escaped name
	} {
		var p peerPage
		if err := json.Unmarshal([]byte(tc.body), &p); err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		cur := ""
		if p.Pagination.Cursor != nil {
			cur = *p.Pagination.Cursor
		}
		if len(p.Runners) != tc.runners || cur != tc.cursor || tc.runners > 0 && (p.Runners[0].id != rid || p.Runners[0].createTs != 9) {
			t.Errorf("%s: %+v", tc.body, p)
		}
	}
	var p peerPage
	if err := json.Unmarshal([]byte(`{"runners":[{"runner_id":"bad","create_ts":1}],"pagination":{"cursor":null}}`), &p); err == nil {
		t.Error("a bad runner id accepted")
	}

	// The items are the page's own: the caller may reuse its buffer.
	body := []byte(`{"runners":[` + r + `,` + r + `],"pagination":{"cursor":null}}`)
	p = peerPage{}
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	clear(body)
	for _, it := range p.Runners {
		if string(it.raw) != r {
			t.Errorf("item %q after the input was overwritten; want %q", it.raw, r)
		}
	}
}
