package runnerconfig

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/pkg/outbound"
	"github.com/berthhq/berth/pkg/rerr"
)

func u64p(v uint64) *uint64 { return &v }
func strp(s string) *string { return &s }

func defaultCommon() keys.RunnerConfigCommon {
	return keys.RunnerConfigCommon{DrainOnVersionUpgrade: true, ActorEvictionRate: 1}
}

func TestParseRequestDefaults(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       keys.RunnerConfig
	}{
		{"empty normal", `{"normal":{}}`, keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: defaultCommon()}}},
		{"normal with nulls", `{"normal":{"drain_on_version_upgrade":null,"actor_eviction_rate":null},"metadata":null,"drain_on_version_upgrade":null}`,
			keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: defaultCommon()}}},
		{"normal set", `{"normal":{"drain_on_version_upgrade":false,"actor_eviction_delay":5,"actor_eviction_period":6,"actor_eviction_rate":0.5}}`,
			keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: keys.RunnerConfigCommon{ActorEvictionDelay: 5, ActorEvictionPeriod: 6, ActorEvictionRate: 0.5}}}},
		{"root drain wins", `{"normal":{"drain_on_version_upgrade":true},"drain_on_version_upgrade":false}`,
			keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: keys.RunnerConfigCommon{ActorEvictionRate: 1}}}},
		{"metadata compacted", `{"normal":{},"metadata":{ "a" : [1, 2] }}`,
			keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: defaultCommon()}, Metadata: strp(`{"a":[1,2]}`)}},
		{"metadata scalar", `{"normal":{},"metadata":"x"}`,
			keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: defaultCommon()}, Metadata: strp(`"x"`)}},
		{"serverless minimal", `{"serverless":{"url":"https://app.example/api","request_lifespan":3600}}`,
			keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
				URL: "https://app.example/api", Headers: map[string]string{}, RequestLifespan: 3600, MaxConcurrentActors: 1000,
				DrainGracePeriod: 1800, SlotsPerRunner: 1, MaxRunners: 1000, RunnerConfigCommon: defaultCommon(),
			}}},
		{"max_concurrent_actors follows max_runners", `{"serverless":{"url":"http://h","request_lifespan":600,"drain_grace_period":60,"max_runners":7,"headers":{"x-a":"1"},"metadata_poll_interval":5000,"drain_on_version_upgrade":false}}`,
			keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
				URL: "http://h", Headers: map[string]string{"x-a": "1"}, RequestLifespan: 600, MaxConcurrentActors: 7,
				DrainGracePeriod: 60, SlotsPerRunner: 1, MaxRunners: 7, MetadataPollInterval: u64p(5000),
				RunnerConfigCommon: keys.RunnerConfigCommon{ActorEvictionRate: 1},
			}}},
		{"serverless all set", `{"serverless":{"url":"http://h:8080/x","request_lifespan":600,"drain_grace_period":0,"max_runners":7,"max_concurrent_actors":3,"slots_per_runner":2,"min_runners":1,"runners_margin":4,"actor_eviction_rate":0}}`,
			keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
				URL: "http://h:8080/x", Headers: map[string]string{}, RequestLifespan: 600, MaxConcurrentActors: 3,
				SlotsPerRunner: 2, MinRunners: 1, MaxRunners: 7, RunnersMargin: 4,
				RunnerConfigCommon: keys.RunnerConfigCommon{DrainOnVersionUpgrade: true},
			}}},
	} {
		got, err := ParseRequest([]byte(tc.body), "", 0)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %+v, %v\nwant %+v", tc.name, show(got), err, show(tc.want))
		}
	}
}

func show(c keys.RunnerConfig) string {
	b, _ := json.Marshal(Response{Config: c})
	return string(b)
}

// TestParseRequestErrors checks that every malformed or invalid config is
// refused with the right code, naming the field (here inside a prefix, as
// api-public passes it).
func TestParseRequestErrors(t *testing.T) {
	const ok = `"url":"https://h/","request_lifespan":600,"drain_grace_period":60`
	for _, tc := range []struct {
		body, code, field, reason string
	}{
		{`[]`, "bad_request", "dc", "want an object, got JSON array"},
		{`null`, "bad_request", "dc", "got JSON null"},
		{`{}`, "bad_request", "dc", "exactly one of normal and serverless"},
		{`{"metadata":{}}`, "bad_request", "dc", "exactly one"},
		{`{"normal":{},"serverless":{` + ok + `}}`, "bad_request", "dc", "not both"},
		{`{"normal":{},"extra":1}`, "bad_request", "dc.extra", "unknown field"},
		{`{"Normal":{}}`, "bad_request", "dc.Normal", "unknown field"},
		{`{"normal":null}`, "bad_request", "dc.normal", "want an object, got JSON null"},
		{`{"normal":5}`, "bad_request", "dc.normal", "got JSON number"},
		{`{"normal":{"actor_eviction_rte":1}}`, "bad_request", "dc.normal.actor_eviction_rte", "unknown field"},
		{`{"normal":{"actor_eviction_delay":-1}}`, "bad_request", "dc.normal.actor_eviction_delay", "want an integer from 0 to 4294967295, got JSON number -1"},
		{`{"normal":{"actor_eviction_delay":4294967296}}`, "bad_request", "dc.normal.actor_eviction_delay", "4294967296"},
		{`{"normal":{"actor_eviction_delay":1.5}}`, "bad_request", "dc.normal.actor_eviction_delay", "number 1.5"},
		{`{"normal":{"drain_on_version_upgrade":"yes"}}`, "bad_request", "dc.normal.drain_on_version_upgrade", "want true or false"},
		{`{"normal":{},"drain_on_version_upgrade":1}`, "bad_request", "dc.drain_on_version_upgrade", "want true or false"},
		{`{"normal":{"actor_eviction_rate":1e40}}`, "bad_request", "dc.normal.actor_eviction_rate", "want a number"},
		{`{"normal":{"actor_eviction_rate":-0.5}}`, "invalid", "dc.normal.actor_eviction_rate", "finite number ≥ 0"},
		{"{\"normal\":{},\"metadata\":\"\xff\"}", "bad_request", "dc.metadata", "not valid UTF-8"},
		{`{"serverless":{"request_lifespan":600}}`, "bad_request", "dc.serverless.url", "required"},
		{`{"serverless":{"url":null,"request_lifespan":600}}`, "bad_request", "dc.serverless.url", "required"},
		{`{"serverless":{"url":"https://h/"}}`, "bad_request", "dc.serverless.request_lifespan", "required"},
		{`{"serverless":{"URL":"https://h/","request_lifespan":600}}`, "bad_request", "dc.serverless.URL", "unknown field"},
		{`{"serverless":{` + ok + `,"headers":{"a":1}}}`, "bad_request", "dc.serverless.headers", "want a string"},
		{`{"serverless":{` + ok + `,"headers":[]}}`, "bad_request", "dc.serverless.headers", "want an object of strings"},
		{`{"serverless":{"url":"not a url","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", "invalid serverless url: relative URL without a base"},
		{`{"serverless":{"url":"ftp://h/","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", `invalid serverless url: scheme "ftp" is not allowed, expected http or https`},
		{`{"serverless":{"url":"/relative","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", "invalid serverless url: relative URL without a base"},
		{`{"serverless":{"url":"http://","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", "invalid serverless url: empty host"},
		{`{"serverless":{"url":"http://u:p@h/","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", "invalid serverless url: url must not contain embedded credentials"},
		{`{"serverless":{"url":"http://h:65536/","request_lifespan":600,"drain_grace_period":60}}`, "invalid", "", "invalid serverless url: invalid port number"},
		{`{"serverless":{` + ok + `,"slots_per_runner":0}}`, "invalid", "", "`slots_per_runner` cannot be 0"},
		{`{"serverless":{"url":"https://h/","request_lifespan":600}}`, "invalid", "", "`drain_grace_period` must be less than `request_lifespan` (1800s >= 600s)"},
		{`{"serverless":{"url":"https://h/","request_lifespan":600,"drain_grace_period":600}}`, "invalid", "", "`drain_grace_period` must be less than `request_lifespan` (600s >= 600s)"},
		{`{"serverless":{"url":"https://h/","request_lifespan":100000,"drain_grace_period":1801}}`, "invalid", "", "`drain_grace_period` cannot be greater than `actor_stop_threshold` (1801000ms > 1800000ms). If `drain_grace_period` was omitted, the default is 1800s."},
		{`{"serverless":{` + ok + `,"headers":{"bad name":"v"}}}`, "invalid", "", "invalid header name: invalid HTTP header name"},
		{`{"serverless":{` + ok + `,"headers":{"":"v"}}}`, "invalid", "", "invalid header name: invalid HTTP header name"},
		{`{"serverless":{` + ok + `,"headers":{"` + strings.Repeat("n", 129) + `":"v"}}}`, "invalid", "", "invalid header name: too long (max 128)"},
		{`{"serverless":{` + ok + `,"headers":{"n":"` + strings.Repeat("v", 4097) + `"}}}`, "invalid", "", "invalid header value: too long (max 4096)"},
		{`{"serverless":{` + ok + `,"headers":{"n":"a\nb"}}}`, "invalid", "", "invalid header value: failed to parse header value"},
		{`{"serverless":{` + ok + `,"headers":` + manyHeaders(17) + `}}`, "invalid", "", "too many headers (max 16)"},
	} {
		_, err := ParseRequest([]byte(tc.body), "dc", 0)
		e, isRerr := rerr.As(err)
		wantGroup := "api"
		if tc.code == "invalid" {
			wantGroup = "runner_config"
		}
		switch {
		case !isRerr || e.Group != wantGroup || e.Code != tc.code:
			t.Errorf("%s: %v; want %s.%s", tc.body, err, wantGroup, tc.code)
		case tc.field == "": // the reference's check: its exact reason, no field
			if _, has := e.Metadata["field"]; has || e.Metadata["reason"] != tc.reason {
				t.Errorf("%s: metadata %v, want exactly the reason %q", tc.body, e.Metadata, tc.reason)
			}
		case e.Metadata["field"] != tc.field:
			t.Errorf("%s: field %v, want %s (%v)", tc.body, e.Metadata["field"], tc.field, err)
		case !strings.Contains(e.Metadata["reason"].(string), tc.reason) || !strings.HasPrefix(e.Metadata["reason"].(string), tc.field+": "):
			t.Errorf("%s: reason %q; want it to start with the field and mention %q", tc.body, e.Metadata["reason"], tc.reason)
		}
	}
	// Good edge cases: 16 headers, names of 128 bytes, tabs and non-ASCII in values, upper case names.
	good := `{"serverless":{` + ok + `,"headers":` + manyHeaders(16) + `}}`
	if _, err := ParseRequest([]byte(good), "", 0); err != nil {
		t.Errorf("16 headers: %v", err)
	}
	good = `{"serverless":{` + ok + `,"headers":{"` + strings.Repeat("n", 128) + `":"` + strings.Repeat("v", 4096) + `","X-Token":"a\tb é"}}}`
	if _, err := ParseRequest([]byte(good), "", 0); err != nil {
		t.Errorf("long header: %v", err)
	}
	// A larger actor_stop_threshold allows a longer drain_grace_period.
	if _, err := ParseRequest([]byte(`{"serverless":{"url":"https://h/","request_lifespan":100000,"drain_grace_period":1801}}`), "", 2_000_000); err != nil {
		t.Errorf("threshold 2,000,000 ms: %v", err)
	}
}

func manyHeaders(n int) string {
	h := map[string]string{}
	for i := range n {
		h["x-h"+string(rune('a'+i))] = "v"
	}
	b, _ := json.Marshal(h)
	return string(b)
}

func TestValidateStoredForms(t *testing.T) {
	nan := float32(0)
	nan = nan / nan
	for name, tc := range map[string]struct {
		c     keys.RunnerConfig
		field string
	}{
		"neither":            {keys.RunnerConfig{}, ""},
		"both":               {keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{}, Serverless: &keys.ServerlessRunnerConfig{}}, ""},
		"NaN rate":           {keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: keys.RunnerConfigCommon{ActorEvictionRate: nan}}}, "normal.actor_eviction_rate"},
		"bad metadata":       {keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{}, Metadata: strp("{")}, "metadata"},
		"metadata not UTF-8": {keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{}, Metadata: strp("\"\xff\"")}, "metadata"},
	} {
		err := Validate(tc.c, "", 0)
		if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeRunnerConfigInvalid) || e.Metadata["field"] != tc.field {
			t.Errorf("%s: %v; want runner_config.invalid naming %q", name, err, tc.field)
		}
	}
}

func TestResponseJSON(t *testing.T) {
	pv := uint16(6)
	for _, tc := range []struct {
		r    Response
		want string
	}{
		{Response{Config: keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: defaultCommon()}}},
			`{"normal":{"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"protocol_version":null}`},
		{Response{Config: keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{RunnerConfigCommon: keys.RunnerConfigCommon{ActorEvictionRate: 0.1}}}, ProtocolVersion: &pv},
			`{"normal":{"drain_on_version_upgrade":false,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":0.1},"protocol_version":6}`},
		{Response{Config: keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
			URL: "https://h/", RequestLifespan: 600, MaxConcurrentActors: 1000, DrainGracePeriod: 60, SlotsPerRunner: 1, MaxRunners: 1000,
			RunnerConfigCommon: defaultCommon()}, Metadata: strp(`{"a":1}`)}},
			`{"serverless":{"url":"https://h/","headers":{},"request_lifespan":600,"max_concurrent_actors":1000,"drain_grace_period":60,"slots_per_runner":1,"min_runners":0,"max_runners":1000,"runners_margin":0,"drain_on_version_upgrade":true,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":1},"metadata":{"a":1},"protocol_version":null}`},
		{Response{Config: keys.RunnerConfig{Serverless: &keys.ServerlessRunnerConfig{
			URL: "https://h/", Headers: map[string]string{"b": "2", "a": "1"}, MetadataPollInterval: u64p(5000)}}},
			`{"serverless":{"url":"https://h/","headers":{"a":"1","b":"2"},"request_lifespan":0,"max_concurrent_actors":0,"drain_grace_period":0,"slots_per_runner":0,"min_runners":0,"max_runners":0,"runners_margin":0,"metadata_poll_interval":5000,"drain_on_version_upgrade":false,"actor_eviction_delay":0,"actor_eviction_period":0,"actor_eviction_rate":0},"protocol_version":null}`},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s, %v\nwant %s", b, err, tc.want)
		}
		var back Response
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tc.r) && show(back.Config) != show(tc.r.Config) {
			t.Errorf("Unmarshal(%s) = %+v, %v", b, back, err)
		}
		if again, _ := json.Marshal(back); string(again) != string(b) {
			t.Errorf("Marshal(Unmarshal(%s)) = %s", b, again)
		}
	}
	var r Response
	for _, bad := range []string{`{"normal":{},"protocol_version":-1}`, `{"normal":{},"bogus":1}`, `{"protocol_version":1}`, `[]`} {
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("Unmarshal(%s) accepted", bad)
		}
	}
	if err := json.Unmarshal([]byte(`{"normal":{},"runner_pool_error":"downgrade","protocol_version":null}`), &r); err != nil || r.Config.Normal == nil {
		t.Errorf("runner_pool_error: %+v, %v", r, err)
	}
	// A response parses back, as a request, into the config it shows: the defaults are explicit.
	c, err := ParseRequest([]byte(`{"serverless":{"url":"https://h/","request_lifespan":600,"drain_grace_period":60},"metadata":[1]}`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	var round map[string]json.RawMessage
	b, _ := json.Marshal(Response{Config: c})
	if err := json.Unmarshal(b, &round); err != nil {
		t.Fatal(err)
	}
	delete(round, "protocol_version")
	b, _ = json.Marshal(round)
	again, err := ParseRequest(b, "", 0)
	if err != nil || !reflect.DeepEqual(again, c) {
		t.Errorf("round trip: %s → %s, %v", show(c), show(again), err)
	}
}

func TestCheckName(t *testing.T) {
	for _, name := range []string{"default", "my-pool_1.x", "é", strings.Repeat("a", MaxNameLen), "a b", "a%2Fb", "a?b#c"} {
		if err := CheckName("runner_name", name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", strings.Repeat("a", MaxNameLen+1), "a/b", "a\nb", "\x00", "\xff"} {
		err := CheckName("runner_name", name)
		if e, ok := rerr.As(err); !ok || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != "runner_name" {
			t.Errorf("%q: %v", name, err)
		}
	}
}

func TestCheckDestination(t *testing.T) {
	c, err := ParseRequest([]byte(`{"serverless":{"url":"http://10.0.0.1/api","request_lifespan":600,"drain_grace_period":60}}`), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	e, ok := rerr.As(CheckDestination(c, outbound.Policy{}))
	if !ok || !rerr.Is(e, rerr.CodeRunnerConfigInvalid) ||
		e.Metadata["reason"] != "invalid serverless url: address 10.0.0.1 is not an allowed destination (private)" {
		t.Fatalf("CheckDestination = %v", e)
	}
	if err := CheckDestination(c, outbound.Policy{AllowPrivate: true}); err != nil {
		t.Fatalf("private allowed: %v", err)
	}
	if err := CheckDestination(keys.RunnerConfig{Normal: &keys.NormalRunnerConfig{}}, outbound.Policy{}); err != nil {
		t.Fatalf("normal config: %v", err)
	}
}
