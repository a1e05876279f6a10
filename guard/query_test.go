package guard

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/rerr"
)

func b64(b ...byte) string { return base64.RawURLEncoding.EncodeToString(b) }

func TestParseQuery(t *testing.T) {
	const base = "rvt-namespace=default&rvt-method="
	goc := base + "getOrCreate&rvt-pool=echo"
	for _, tc := range []struct {
		name        string
		path, query string
		ok          bool
		want        Query // compared when errCode is 0
		errCode     rerr.Code
		errMeta     map[string]any
	}{
		// Not the query form.
		{name: "no rvt", path: "/gateway/abc/x", query: "a=1"},
		{name: "not gateway", path: "/actors", query: base + "get"},
		{name: "double slash", path: "/gateway//x", query: base + "get"},
		{name: "gatewayx", path: "/gatewayx/a", query: base + "get"},
		{name: "rvt in value only", path: "/gateway/a", query: "x=rvt-namespace"},
		{name: "encoded prefix", path: "/gateway/a", query: "rvt%2Dnamespace=x"},

		{name: "get", path: "/gateway/counter/hello/world", query: "a=1&" + base + "get&b=x+y%20z&rvt-key=k1,k2", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "counter", Key: []string{"k1", "k2"}, Path: "/hello/world?a=1&b=x+y%20z"}},
		{name: "get, no rest", path: "/gateway/counter", query: base + "get", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "counter", Path: "/"}},
		{name: "get, trailing slash", path: "/gateway/counter/", query: base + "get&rvt-key=", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "counter", Path: "/"}},
		{name: "empty actor params dropped", path: "/gateway/c/p", query: "&&a&" + base + "get&&b=", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "c", Path: "/p?a&b="}},
		{name: "get with pool is allowed", path: "/gateway/c", query: base + "get&rvt-pool=p&rvt-token=t&rvt-skip-ready-wait=1", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "c", Token: "t", SkipReadyWait: true, Path: "/"}},
		{name: "values form-decoded", path: "/gateway/a%20b/x", query: "rvt-namespace=my+ns&rvt-method=get&rvt-key=a%2Cb,c%2Fd,,%zz", ok: true,
			want: Query{Namespace: "my ns", Method: "get", Name: "a b", Key: []string{"a", "b", "c/d", "", "%zz"}, Path: "/x"}},
		{name: "fragment dropped", path: "/gateway/c/x", query: base + "get", ok: true,
			want: Query{Namespace: "default", Method: "get", Name: "c", Path: "/x"}},
		{name: "getOrCreate", path: "/gateway/c/ws", query: goc + "&rvt-key=k&rvt-input=" + b64(0xa1, 0x61, 0x61, 0x01) +
			"&rvt-region=eu&rvt-crash-policy=restart&rvt-skip-ready-wait=false&q=1", ok: true,
			want: Query{Namespace: "default", Method: "getOrCreate", Name: "c", Key: []string{"k"}, Pool: "echo",
				Input: []byte{0xa1, 0x61, 0x61, 0x01}, Region: "eu", CrashPolicy: "restart", Path: "/ws?q=1"}},
		{name: "getOrCreate with runner", path: "/gateway/c", query: base + "getOrCreate&rvt-runner=r", ok: true,
			want: Query{Namespace: "default", Method: "getOrCreate", Name: "c", Pool: "r", CrashPolicy: "sleep", Path: "/"}},
		{name: "pool wins over runner", path: "/gateway/c", query: base + "getOrCreate&rvt-runner=r&rvt-pool=p", ok: true,
			want: Query{Namespace: "default", Method: "getOrCreate", Name: "c", Pool: "p", CrashPolicy: "sleep", Path: "/"}},
		{name: "no = is an empty value", path: "/gateway/c", query: "rvt-namespace&rvt-method=get", ok: true,
			want: Query{Method: "get", Name: "c", Path: "/"}},

		// Errors.
		{name: "no name", path: "/gateway/", query: base + "get", ok: true, errCode: rerr.CodeGuardQueryEmptyActorName},
		{name: "no name, no slash", path: "/gateway", query: base + "get", ok: true, errCode: rerr.CodeGuardQueryEmptyActorName},
		{name: "token syntax", path: "/gateway/c@tok/x", query: base + "get", ok: true, errCode: rerr.CodeGuardQueryPathTokenSyntax},
		{name: "name not utf-8", path: "/gateway/%ff/x", query: base + "get", ok: true,
			errCode: rerr.CodeGuardQueryInvalidPercentEncoding, errMeta: map[string]any{"name": "name"}},
		{name: "value not utf-8", path: "/gateway/c", query: base + "get&rvt-key=%c3%28", ok: true,
			errCode: rerr.CodeGuardQueryInvalidPercentEncoding, errMeta: map[string]any{"name": "rvt-key"}},
		{name: "duplicate", path: "/gateway/c", query: base + "get&rvt-key=a&rvt-key=b", ok: true,
			errCode: rerr.CodeGuardQueryDuplicateParam, errMeta: map[string]any{"name": "rvt-key"}},
		{name: "unknown", path: "/gateway/c", query: base + "get&rvt-foo=1", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
		{name: "missing namespace", path: "/gateway/c", query: "rvt-method=get", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
		{name: "missing method", path: "/gateway/c", query: "rvt-namespace=default", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
		{name: "bad method", path: "/gateway/c", query: base + "list", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
		{name: "bad skip", path: "/gateway/c", query: base + "get&rvt-skip-ready-wait=yes", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
		{name: "get with input", path: "/gateway/c", query: base + "get&rvt-input=" + b64(1), ok: true, errCode: rerr.CodeGuardQueryGetDisallowedParams},
		{name: "get with region", path: "/gateway/c", query: base + "get&rvt-region=eu", ok: true, errCode: rerr.CodeGuardQueryGetDisallowedParams},
		{name: "get with crash policy", path: "/gateway/c", query: base + "get&rvt-crash-policy=sleep", ok: true, errCode: rerr.CodeGuardQueryGetDisallowedParams},
		{name: "get with runner", path: "/gateway/c", query: base + "get&rvt-runner=r", ok: true, errCode: rerr.CodeGuardQueryGetDisallowedParams},
		{name: "no pool", path: "/gateway/c", query: base + "getOrCreate&rvt-key=k", ok: true, errCode: rerr.CodeGuardQueryMissingPool},
		{name: "padded input", path: "/gateway/c", query: goc + "&rvt-input=AQ==", ok: true, errCode: rerr.CodeGuardQueryInvalidBase64Input},
		{name: "standard alphabet", path: "/gateway/c", query: goc + "&rvt-input=%2B%2F8", ok: true, errCode: rerr.CodeGuardQueryInvalidBase64Input},
		{name: "length 1 mod 4", path: "/gateway/c", query: goc + "&rvt-input=AAAAA", ok: true, errCode: rerr.CodeGuardQueryInvalidBase64Input},
		{name: "trailing bits", path: "/gateway/c", query: goc + "&rvt-input=AR", ok: true, errCode: rerr.CodeGuardQueryInvalidBase64Input},
		{name: "empty input", path: "/gateway/c", query: goc + "&rvt-input=", ok: true, errCode: rerr.CodeGuardQueryInvalidCBORInput},
		{name: "truncated cbor", path: "/gateway/c", query: goc + "&rvt-input=" + b64(0x62, 0x61), ok: true, errCode: rerr.CodeGuardQueryInvalidCBORInput},
		{name: "bad crash policy", path: "/gateway/c", query: goc + "&rvt-crash-policy=never", ok: true, errCode: rerr.CodeGuardQueryInvalidParams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, ok, err := ParseQuery(tc.path, tc.query)
			if ok != tc.ok {
				t.Fatalf("ok = %v, err %v", ok, err)
			}
			if tc.errCode != 0 {
				e, isR := rerr.As(err)
				if !isR || !rerr.Is(e, tc.errCode) || rerr.HTTPStatus(e) != 400 {
					t.Fatalf("err = %v, want %s (400)", err, tc.errCode)
				}
				for k, v := range tc.errMeta {
					if e.Metadata[k] != v {
						t.Fatalf("metadata %v, want %s=%v", e.Metadata, k, v)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.ok {
				return
			}
			if !reflect.DeepEqual(q, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", q, tc.want)
			}
		})
	}
}

func TestParseGatewayTarget(t *testing.T) {
	// The #fragment is dropped before the query is looked at.
	p, q, _ := splitTarget("/gateway/c/x?rvt-namespace=d&rvt-method=get#rvt-foo=1")
	got, ok, err := ParseQuery(p, q)
	if !ok || err != nil || got.Path != "/x" {
		t.Fatalf("%+v %v %v", got, ok, err)
	}
}

func TestSerializedKey(t *testing.T) {
	for _, tc := range []struct {
		key  []string
		want string
	}{
		{nil, "/"},
		{[]string{"test"}, "test"},
		{[]string{"a", "b", "c"}, "a/b/c"},
		{[]string{"a/b"}, `a\/b`},
		{[]string{"a/b", "c"}, `a\/b/c`},
		{[]string{"/"}, `\/`},
		{[]string{""}, `\0`},
		{[]string{`a\b`}, `a\\b`},
		{[]string{"a/b", "", "c/d"}, `a\/b/\0/c\/d`},
	} {
		if got := (Query{Key: tc.key}).SerializedKey(); got != tc.want {
			t.Errorf("SerializedKey(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
}

func TestValidCBOR(t *testing.T) {
	for _, tc := range []struct {
		in []byte
		ok bool
	}{
		{[]byte{0x00}, true},
		{[]byte{0x17}, true},
		{[]byte{0x18, 0x18}, true},
		{[]byte{0x1b, 0, 0, 0, 0, 0, 0, 0, 1}, true},
		{[]byte{0x20}, true},
		{[]byte{0x43, 1, 2, 3}, true},
		{[]byte{0x63, 'a', 'b', 'c'}, true},
		{[]byte{0x82, 0x01, 0x02}, true},
		{[]byte{0xa1, 0x61, 'a', 0x01}, true},
		{[]byte{0x9f, 0x01, 0x02, 0xff}, true},
		{[]byte{0xbf, 0x61, 'a', 0x01, 0xff}, true},
		{[]byte{0x5f, 0x42, 1, 2, 0x41, 3, 0xff}, true},
		{[]byte{0x7f, 0x61, 'a', 0xff}, true},
		{[]byte{0xc1, 0x1a, 0, 0, 0, 1}, true},
		{[]byte{0xf4}, true},
		{[]byte{0xf6}, true},
		{[]byte{0xf8, 0x20}, true},
		{[]byte{0xf9, 0x3c, 0x00}, true},
		{[]byte{0xfb, 0, 0, 0, 0, 0, 0, 0, 0}, true},

		{nil, false},
		{[]byte{0x18}, false},                  // argument missing
		{[]byte{0x1c}, false},                  // reserved additional info
		{[]byte{0x1f}, false},                  // indefinite integer
		{[]byte{0x43, 1, 2}, false},            // short string
		{[]byte{0x62, 0xc3, 0x28}, false},      // text not UTF-8
		{[]byte{0x82, 0x01}, false},            // short array
		{[]byte{0xa1, 0x01}, false},            // map without a value
		{[]byte{0xbf, 0x01, 0xff}, false},      // indefinite map with a key and no value
		{[]byte{0x9f, 0x01}, false},            // no break
		{[]byte{0xff}, false},                  // lone break
		{[]byte{0x82, 0x01, 0xff}, false},      // break in a definite array
		{[]byte{0x5f, 0x61, 'a', 0xff}, false}, // text chunk in a byte string
		{[]byte{0x5f, 0x5f, 0xff, 0xff}, false},
		{[]byte{0xc1}, false},       // tag without content
		{[]byte{0xdf, 0x01}, false}, // indefinite tag
		{[]byte{0xf8, 0x10}, false}, // simple value < 32 in two bytes
		{[]byte{0x01, 0x02}, false}, // trailing bytes
		{[]byte{0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false}, // huge count
		{[]byte{0x5b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false}, // huge length
		{append([]byte(strings.Repeat("\x81", maxCBORDepth+1)), 0x00), false},
	} {
		if err := validCBOR(tc.in); (err == nil) != tc.ok {
			t.Errorf("validCBOR(% x) = %v, want ok %v", tc.in, err, tc.ok)
		}
	}
	if err := validCBOR(append([]byte(strings.Repeat("\x81", maxCBORDepth)), 0x00)); err != nil {
		t.Errorf("depth %d: %v", maxCBORDepth, err)
	}
}

func FuzzParseQuery(f *testing.F) {
	f.Add("/gateway/c/x", "rvt-namespace=d&rvt-method=getOrCreate&rvt-pool=p&rvt-key=a,b&rvt-input="+b64(0xa1, 0x61, 'a', 1)+"&z=1")
	f.Add("/gateway/c@t/x", "rvt-namespace=d&rvt-method=get")
	f.Add("/gateway/%ff", "rvt-key=%zz&&rvt-key")
	f.Fuzz(func(t *testing.T, path, query string) {
		q, ok, err := ParseQuery(path, query)
		if !ok {
			if err != nil {
				t.Fatalf("not the query form but an error: %v", err)
			}
			return
		}
		if err != nil {
			if e, isR := rerr.As(err); !isR || rerr.HTTPStatus(e) != 400 {
				t.Fatalf("error %v is not a 400 guard error", err)
			}
			return
		}
		if q.Name == "" || !strings.HasPrefix(q.Path, "/") || (q.Method != MethodGet && q.Method != MethodGetOrCreate) {
			t.Fatalf("ParseQuery(%q, %q) = %+v", path, query, q)
		}
		if _, rq, _ := strings.Cut(q.Path, "?"); hasRvtParam(rq) {
			t.Fatalf("an rvt parameter reached the actor: %q", q.Path)
		}
		if q.Input != nil && validCBOR(q.Input) != nil {
			t.Fatalf("input %x is not CBOR", q.Input)
		}
	})
}

func FuzzValidCBOR(f *testing.F) {
	f.Add([]byte{0xbf, 0x61, 'a', 0x9f, 0x01, 0xff, 0xff})
	f.Add([]byte{0x5f, 0x42, 1, 2, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = validCBOR(b) // must not panic or hang
	})
}
