package runnerconfig

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/rerr"
)

// FuzzParseRequest runs ParseRequest on any body: it never panics, refuses only with
// api.bad_request or runner_config.invalid naming a field under the prefix, and what it
// accepts can be stored (the value codec round-trips it) and shown (the response form
// decodes to the same config).
func FuzzParseRequest(f *testing.F) {
	for _, s := range []string{
		`{"normal":{}}`,
		`{"normal":{"drain_on_version_upgrade":false,"actor_eviction_delay":5,"actor_eviction_rate":0.5},"drain_on_version_upgrade":true}`,
		`{"serverless":{"url":"https://h/x","request_lifespan":600,"drain_grace_period":60,"headers":{"a":"b"},"max_runners":3,"metadata_poll_interval":1},"metadata":{"k":[1,"x",null]}}`,
		`{"serverless":{"url":"http://h","request_lifespan":1}}`,
		`{"normal":null}`, `[]`, `null`, `{"Normal":{}}`, "{\"normal\":{},\"metadata\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseRequest(b, "dc", 0)
		if err != nil {
			e, ok := rerr.As(err)
			if !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) && !rerr.Is(e, rerr.CodeRunnerConfigInvalid) {
				t.Fatalf("ParseRequest(%q) = %v", b, err)
			}
			if field, has := e.Metadata["field"].(string); has && field != "dc" && (len(field) < 3 || field[:3] != "dc.") {
				t.Fatalf("ParseRequest(%q): field %q is not under the prefix", b, field)
			}
			return
		}
		stored, err := keys.RunnerConfigDataKey{}.Decode(keys.RunnerConfigDataKey{}.Encode(c))
		if err != nil || !reflect.DeepEqual(stored, c) {
			t.Fatalf("%q: stored %+v, %v; want %+v", b, stored, err, c)
		}
		shown, err := json.Marshal(Response{Config: c})
		if err != nil {
			t.Fatalf("%q: Marshal: %v", b, err)
		}
		var back Response
		if err := json.Unmarshal(shown, &back); err != nil || show(back.Config) != string(mustJSON(t, c)) {
			t.Fatalf("%q: shown as %s, read back %+v, %v", b, shown, back, err)
		}
	})
}

func mustJSON(t *testing.T, c keys.RunnerConfig) []byte {
	b, err := json.Marshal(Response{Config: c})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
