package apipublic

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// FuzzTopLevel checks the quick member scan against encoding/json: on any valid JSON object
// it finds exactly the members encoding/json sees (the last of a repeated name), and it
// never fails on other input.
func FuzzTopLevel(f *testing.F) {
	for _, s := range []string{
		`{"runner_id":"abc","create_ts":5}`,
		` { "create_ts" : -12 , "x": {"create_ts": 1, "y": ["}", "\"", {"a":[1,2]}]}, "runner_id" : "q\"r" } `,
		`{"a":"\\","create_ts":1e3,"runner_id":null,"runner_id":"z"}`,
		`{"metadata":{"runner_id":"inner"},"create_ts":1}`,
		`{"run\u006eer_id":"x","create_ts":1}`,
		`{}`, `[]`, `"x"`, `{"a`, `{"a":`, `{"a":"`, `{"a":{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		va, vb, ok := topLevel(b, "runner_id", "create_ts")
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil {
			return // not an object: only "no panic, no hang" is asked
		}
		wa, hasA := m["runner_id"]
		wb, hasB := m["create_ts"]
		if bytes.Contains(b, []byte(`\`)) && !ok {
			return // a name may hold an escape: the slow way decides
		}
		if ok != (hasA && hasB) {
			t.Fatalf("%s: ok %v, encoding/json sees runner_id %v create_ts %v", b, ok, hasA, hasB)
		}
		if ok && (!bytes.Equal(va, wa) || !bytes.Equal(vb, wb)) {
			t.Fatalf("%s: got %s %s, want %s %s", b, va, vb, wa, wb)
		}
	})
}

func TestRawRunner(t *testing.T) {
	rid := id.New(3)
	for _, tc := range []struct {
		body    string
		wantErr bool
	}{
		{`{"runner_id":"` + rid.String() + `","name":"a\"b","create_ts":42,"metadata":{"create_ts":1}}`, false},
		{`{"create_ts":42,"runner_id":"` + rid.String() + `"}`, false},
		{`{"runner_id":"` + rid.String() + `","create_ts":4.2e1}`, true}, // the slow way says why
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
