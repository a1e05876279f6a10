package apipeer

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/namespace"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded" // mem://
)

var (
	bg    = context.Background()
	quiet = slog.New(slog.NewTextHandler(io.Discard, nil))
)

// peer is an api-peer over its own in-memory store.
type peer struct {
	db      udb.Database
	h       http.Handler
	srv     *Server
	defNsID id.ID // the default namespace, in the leader's store
}

// twoDCs is a topology with the leader "a" (label 1) and "b" (label 2); the peer URLs are
// filled in by tests that need them.
func twoDCs(local uint16) apihttp.Topology {
	return apihttp.Topology{Local: local, Datacenters: []apihttp.Datacenter{
		{Name: "a", Label: 1, IsLeader: true, PeerURL: "http://127.0.0.1:1"},
		{Name: "b", Label: 2, PeerURL: "http://127.0.0.1:1"},
	}}
}

// newPeer starts an api-peer over a fresh store; in the leader it creates the default
// namespace, as the engine does at start. peers may be nil.
func newPeer(t *testing.T, topo apihttp.Topology, peers *apihttp.PeerClient) *peer {
	t.Helper()
	db, err := udb.Open(bg, "mem://")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p := &peer{db: db}
	if topo.LocalDatacenter().IsLeader {
		v, err := udb.Transact(bg, db, func(tx udb.Transaction) (namespace.EnsureDefaultOutput, error) {
			return namespace.EnsureDefault(bg, tx, namespace.EnsureDefaultInput{NamespaceID: id.New(topo.Local), NowMs: 1000})
		})
		if err != nil {
			t.Fatal(err)
		}
		p.defNsID = v.Namespace.NamespaceID
	}
	p.srv = New(Deps{DB: db, Topology: topo, Peers: peers, Log: quiet})
	// The api-peer serves the same paths and shapes as api-public: check them against its
	// contract too.
	p.h = openapitest.Handler(t, p.srv.Handler())
	return p
}

type answer struct {
	status int
	body   string
}

// do sends method target (with body as JSON when not empty) to h; unchecked marks a request
// the public contract does not describe.
func do(t *testing.T, h http.Handler, method, target, body string, unchecked bool) answer {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if unchecked {
		req = openapitest.Unchecked(req)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return answer{w.Code, strings.TrimSpace(w.Body.String())}
}

// decode decodes a 200 answer into out.
func decode(t *testing.T, a answer, out any) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("status %d: %s", a.status, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), out); err != nil {
		t.Fatalf("decoding %s: %v", a.body, err)
	}
}

// errKey returns the group.code of an error answer, and its field metadata.
func errKey(t *testing.T, a answer) (string, string) {
	t.Helper()
	e, err := rerr.Parse(a.status, []byte(a.body))
	if err != nil {
		t.Fatalf("not an error: %d %s", a.status, a.body)
	}
	field, _ := e.Metadata["field"].(string)
	return e.Key(), field
}

func TestNamespacesCreateAndList(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	for _, name := range []string{"zeta", "alpha", "mid"} {
		var out apitypes.NamespacesCreateResponse
		decode(t, do(t, p.h, "POST", "/namespaces", `{"name":"`+name+`","display_name":"NS `+name+`"}`, false), &out)
		if out.Namespace.Name != name || out.Namespace.DisplayName != "NS "+name || out.Namespace.NamespaceID.Label() != 1 || out.Namespace.CreateTs == 0 {
			t.Errorf("created %+v", out.Namespace)
		}
	}

	var all apitypes.NamespacesListResponse
	decode(t, do(t, p.h, "GET", "/namespaces", "", false), &all)
	var names []string
	for _, ns := range all.Namespaces {
		names = append(names, ns.Name)
	}
	if strings.Join(names, ",") != "alpha,default,mid,zeta" || all.Pagination.Cursor == nil || *all.Pagination.Cursor != "zeta" {
		t.Errorf("list: %v cursor %v", names, all.Pagination.Cursor)
	}

	// Paging by two returns each name once; the last page has a null cursor.
	var paged []string
	cursor := ""
	for range 10 {
		target := "/namespaces?limit=2"
		if cursor != "" {
			target += "&cursor=" + url.QueryEscape(cursor)
		}
		var page apitypes.NamespacesListResponse
		decode(t, do(t, p.h, "GET", target, "", false), &page)
		for _, ns := range page.Namespaces {
			paged = append(paged, ns.Name)
		}
		if page.Pagination.Cursor == nil {
			break
		}
		cursor = *page.Pagination.Cursor
	}
	if strings.Join(paged, ",") != "alpha,default,mid,zeta" {
		t.Errorf("paged: %v", paged)
	}

	// Filters: by name, by ids (repeated and deprecated comma-separated).
	var one apitypes.NamespacesListResponse
	decode(t, do(t, p.h, "GET", "/namespaces?name=mid", "", false), &one)
	if len(one.Namespaces) != 1 || one.Namespaces[0].Name != "mid" {
		t.Errorf("by name: %+v", one)
	}
	mid := one.Namespaces[0].NamespaceID.String()
	def := p.defNsID.String()
	for _, q := range []string{"namespace_id=" + mid + "&namespace_id=" + def, "namespace_ids=" + mid + "," + def, "namespace_id=" + mid + "&namespace_ids=" + def} {
		var got apitypes.NamespacesListResponse
		decode(t, do(t, p.h, "GET", "/namespaces?"+q, "", false), &got)
		if len(got.Namespaces) != 2 || got.Namespaces[0].Name != "default" || got.Namespaces[1].Name != "mid" {
			t.Errorf("%s: %+v", q, got)
		}
	}
	var none apitypes.NamespacesListResponse
	decode(t, do(t, p.h, "GET", "/namespaces?name=nope", "", false), &none)
	if none.Namespaces == nil || len(none.Namespaces) != 0 {
		t.Errorf("unknown name: %+v, want an empty list", none)
	}
}

func TestNamespacesErrors(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	tests := []struct {
		method, target, body string
		status               int
		key, field           string
		unchecked            bool
	}{
		{"POST", "/namespaces", `{"name":"default","display_name":"D"}`, 409, "namespace.name_not_unique", "", false},
		{"POST", "/namespaces", `{"name":"Bad_Name","display_name":"D"}`, 400, "namespace.failed_to_create", "", false},
		{"POST", "/namespaces", `{"name":"ok","display_name":""}`, 400, "namespace.failed_to_create", "", false},
		{"POST", "/namespaces", `{"display_name":"D"}`, 400, "api.bad_request", "name", true},
		{"POST", "/namespaces", `{"name":"ok"}`, 400, "api.bad_request", "display_name", true},
		{"POST", "/namespaces", `{"name":"ok","display_name":"D","x":1}`, 400, "api.bad_request", "x", true},
		{"POST", "/namespaces?x=1", `{"name":"ok","display_name":"D"}`, 400, "api.bad_request", "x", true},
		{"GET", "/namespaces?bogus=1", "", 400, "api.bad_request", "bogus", true},
		{"GET", "/namespaces?limit=-1", "", 400, "api.bad_request", "limit", true},
		{"GET", "/namespaces?limit=1e3", "", 400, "api.bad_request", "limit", true},
		{"GET", "/namespaces?namespace_id=nope", "", 400, "api.bad_request", "namespace_id", true},
		{"GET", "/namespaces?namespace_ids=" + id.New(1).String() + ",nope", "", 400, "api.bad_request", "namespace_ids", true},
		{"GET", "/namespaces?name=", "", 400, "api.bad_request", "name", false},
	}
	for _, tt := range tests {
		a := do(t, p.h, tt.method, tt.target, tt.body, tt.unchecked)
		key, field := errKey(t, a)
		if a.status != tt.status || key != tt.key || field != tt.field {
			t.Errorf("%s %s %s: %d %s (field %q), want %d %s (field %q)", tt.method, tt.target, tt.body, a.status, key, field, tt.status, tt.key, tt.field)
		}
	}
}

// TestNamespacesNotLeader: only the leader serves namespaces.
func TestNamespacesNotLeader(t *testing.T) {
	p := newPeer(t, twoDCs(2), nil)
	for _, tc := range []struct{ method, body string }{{"GET", ""}, {"POST", `{"name":"x","display_name":"X"}`}} {
		a := do(t, p.h, tc.method, "/namespaces", tc.body, tc.method == "GET") // 421 is declared for POST only
		if key, _ := errKey(t, a); a.status != 421 || key != "namespace.not_leader" {
			t.Errorf("%s /namespaces in a follower: %d %s", tc.method, a.status, a.body)
		}
	}
}
