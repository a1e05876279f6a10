package apitypes

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
)

func i64(v int64) *int64 { return &v }

// jsonRunners are runners whose JSON exercises every escape and every optional field.
func jsonRunners() []runner.Runner {
	base := runner.Runner{
		RunnerID: id.New(1), NamespaceID: id.New(1), Datacenter: "dc-1", Name: "pool", Key: "host-1",
		Version: 7, TotalSlots: 100, RemainingSlots: 42, CreateTs: 1700000000123, LastPingTs: 1700000000999,
		LastRtt: 12,
	}
	var out []runner.Runner
	add := func(f func(r *runner.Runner)) {
		r := base
		f(&r)
		out = append(out, r)
	}
	add(func(r *runner.Runner) {})
	add(func(r *runner.Runner) {
		r.DrainTs, r.StopTs, r.LastConnectedTs = i64(1), i64(-5), i64(1<<62)
		r.Version, r.TotalSlots, r.RemainingSlots, r.LastRtt = 1<<32-1, 0, 1<<32-1, 1<<32-1
		r.CreateTs, r.LastPingTs = -1<<63, 1<<63-1
	})
	for _, s := range []string{
		"", `quote " backslash \ slash /`, "<script>&amp;</script>", "tab\tnl\ncr\rbs\bff\f",
		"\x00\x01\x1f\x7f", "é ü 日本 🚀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate",
	} {
		add(func(r *runner.Runner) { r.Name, r.Key, r.Datacenter = s, s+"k", "d"+s })
	}
	for _, md := range []string{
		`{}`, `{"a":1,"b":[true,false,null],"c":{"d":"e"}}`, " { \"a\" : [ 1 , 2 ] ,\n\t\"b\": \"x y\" } ",
		`{"html":"<b>&</b>","ls":"` + "\u2028\u2029" + `","esc":"\u003c\n\"\\"}`, `{"n":1.5e10,"m":-0.0}`,
	} {
		add(func(r *runner.Runner) { r.Metadata = json.RawMessage(md) })
	}
	return out
}

func TestRunnerJSONMatchesEncodingJSON(t *testing.T) {
	for _, r := range jsonRunners() {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendRunner([]byte("prefix"), &r)
		if err != nil || string(got) != "prefix"+string(want) {
			t.Errorf("AppendRunner:\n got %s, %v\nwant prefix%s", got, err, want)
		}
	}
	for _, md := range []string{`{`, `{"a":}`, ``, `nul`} {
		r := runner.Runner{Metadata: json.RawMessage(md)}
		if _, err := json.Marshal(r); err == nil {
			t.Fatalf("encoding/json accepts metadata %q", md)
		}
		if b, err := AppendRunner(nil, &r); err == nil {
			t.Errorf("AppendRunner with metadata %q = %s; want an error", md, b)
		}
	}
}

// respond runs f as an echo handler and returns the response.
func respond(t *testing.T, f func(c echo.Context) error) *httptest.ResponseRecorder {
	t.Helper()
	e := echo.New()
	w := httptest.NewRecorder()
	if err := f(e.NewContext(httptest.NewRequest(http.MethodGet, "/runners", nil), w)); err != nil {
		t.Fatal(err)
	}
	return w
}

// The whole response is what c.JSON writes for RunnersListResponse: same status, headers
// and bytes, with an empty list as [] and a cursor escaped like any string.
func TestWriteRunnersListMatchesCJSON(t *testing.T) {
	cur := `17000<&>"\` + "\u2028"
	for _, c := range []struct {
		runners []runner.Runner
		cursor  *string
	}{
		{nil, nil},
		{[]runner.Runner{}, &cur},
		{jsonRunners(), nil},
		{jsonRunners()[:1], &cur},
	} {
		want := respond(t, func(ec echo.Context) error {
			return ec.JSON(http.StatusOK, RunnersListResponse{Runners: append([]runner.Runner{}, c.runners...), Pagination: apihttp.Pagination{Cursor: c.cursor}})
		})
		got := respond(t, func(ec echo.Context) error { return WriteRunnersList(ec, c.runners, c.cursor) })
		if got.Code != want.Code || got.Body.String() != want.Body.String() {
			t.Errorf("WriteRunnersList:\n got %d %s\nwant %d %s", got.Code, got.Body, want.Code, want.Body)
		}
		for k, v := range want.Header() {
			if g := got.Header()[k]; len(g) != len(v) || len(v) > 0 && g[0] != v[0] {
				t.Errorf("header %s: got %q, want %q", k, g, v)
			}
		}
		if len(got.Header()) != len(want.Header()) {
			t.Errorf("headers: got %v, want %v", got.Header(), want.Header())
		}
	}
}

// FuzzRunnerJSON: AppendRunner writes what encoding/json writes, or fails where it fails.
func FuzzRunnerJSON(f *testing.F) {
	for _, r := range jsonRunners() {
		f.Add(r.Name, r.Key, []byte(r.Metadata), r.CreateTs, r.Version)
	}
	f.Fuzz(func(t *testing.T, name, key string, md []byte, ts int64, version uint32) {
		r := runner.Runner{RunnerID: id.New(2), Name: name, Key: key, Datacenter: name + key, CreateTs: ts, Version: version, LastRtt: version / 3}
		if ts%2 == 0 {
			r.DrainTs = &ts
		}
		if md != nil {
			r.Metadata = json.RawMessage(md)
		}
		want, wantErr := json.Marshal(r)
		got, err := AppendRunner(nil, &r)
		if (err != nil) != (wantErr != nil) || err == nil && string(got) != string(want) {
			t.Fatalf("AppendRunner:\n got %s, %v\nwant %s, %v", got, err, want, wantErr)
		}
	})
}
