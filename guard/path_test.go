package guard

import (
	"testing"

	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
)

func TestParseDirect(t *testing.T) {
	aid := id.New(1).String()
	for _, tc := range []struct {
		path, query string
		ok          bool
		want        Target
		errField    string
	}{
		{path: "/gateway/" + aid + "/hello/world", query: "x=1&y=a+b%20c", ok: true,
			want: Target{ActorID: id.MustParse(aid), Path: "/hello/world?x=1&y=a+b%20c"}},
		{path: "/gateway/" + aid, ok: true, want: Target{ActorID: id.MustParse(aid), Path: "/"}},
		{path: "/gateway/" + aid + "/", ok: true, want: Target{ActorID: id.MustParse(aid), Path: "/"}},
		{path: "/gateway/" + aid + "@tok/ws", ok: true, want: Target{ActorID: id.MustParse(aid), Token: "tok", Path: "/ws"}},
		{path: "/gateway/" + aid + "%40tok/ws", ok: true, want: Target{ActorID: id.MustParse(aid), Token: "tok", Path: "/ws"}},
		{path: "/gateway/not-an-id/x", ok: true, errField: "actor_id"},
		{path: "/gateway/%zz/x", ok: true, errField: "actor_id"},
		{path: "/gateway/" + aid + "//x", ok: false},
		{path: "/gateway/", ok: false},
		{path: "/actors", ok: false},
	} {
		got, ok, err := ParseDirect(tc.path, tc.query)
		if ok != tc.ok {
			t.Errorf("%s: ok = %v", tc.path, ok)
			continue
		}
		if tc.errField != "" {
			e, isR := rerr.As(err)
			if !isR || !rerr.Is(e, rerr.CodeAPIBadRequest) || e.Metadata["field"] != tc.errField {
				t.Errorf("%s: err = %v, want api.bad_request naming %s", tc.path, err, tc.errField)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s?%s = %+v, %v; want %+v", tc.path, tc.query, got, err, tc.want)
		}
	}
}

func FuzzParseDirect(f *testing.F) {
	f.Add("/gateway/"+id.New(1).String()+"@t/a/b", "q=1")
	f.Add("/gateway/x", "")
	f.Fuzz(func(t *testing.T, path, query string) {
		tg, ok, err := ParseDirect(path, query)
		if ok && err == nil && (tg.ActorID.IsZero() || tg.Path == "" || tg.Path[0] != '/') {
			t.Fatalf("ParseDirect(%q, %q) = %+v", path, query, tg)
		}
	})
}
