package apipublic

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/api-public/openapitest"
	apitypes "github.com/berthhq/berth/api-types"
)

// TestNamespacesAtLeader: the public API of b, a follower, creates and lists namespaces at
// the leader a; a namespace created there is usable in every datacenter.
func TestNamespacesAtLeader(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	var created apitypes.NamespacesCreateResponse
	decode(t, c.do(t, "POST", "/namespaces", `{"name":"team-x","display_name":"Team X"}`), &created)
	ns := created.Namespace
	if ns.Name != "team-x" || ns.DisplayName != "Team X" || ns.NamespaceID.Label() != 1 {
		t.Fatalf("created %+v: want an id of the leader (label 1)", ns)
	}
	var list apitypes.NamespacesListResponse
	decode(t, c.do(t, "GET", "/namespaces", ""), &list)
	if len(list.Namespaces) != 2 || list.Namespaces[0].Name != "default" || list.Namespaces[1] != ns {
		t.Errorf("list: %+v", list)
	}
	decode(t, c.do(t, "GET", "/namespaces?limit=1&namespace_id="+ns.NamespaceID.String(), ""), &list)
	if len(list.Namespaces) != 1 || list.Namespaces[0] != ns || list.Pagination.Cursor != nil {
		t.Errorf("by id: %+v", list)
	}
	decode(t, c.do(t, "GET", "/namespaces?limit=1", ""), &list)
	if len(list.Namespaces) != 1 || list.Pagination.Cursor == nil || *list.Pagination.Cursor != "default" {
		t.Errorf("first page of 1: %+v", list)
	}
	decode(t, c.do(t, "GET", "/namespaces?limit=1&cursor=default", ""), &list)
	if len(list.Namespaces) != 1 || list.Namespaces[0].Name != "team-x" {
		t.Errorf("second page of 1: %+v", list)
	}

	// Every datacenter resolves the new name at the leader; the namespace is empty.
	var runners apitypes.RunnersListResponse
	decode(t, c.do(t, "GET", "/runners?namespace=team-x", ""), &runners)
	if len(runners.Runners) != 0 {
		t.Errorf("runners of a new namespace: %+v", runners)
	}

	a := c.do(t, "POST", "/namespaces", `{"name":"team-x","display_name":"Again"}`)
	if e := parseErr(t, a); a.status != 409 || e.Key() != "namespace.name_not_unique" {
		t.Errorf("duplicate: %d %s", a.status, a.body)
	}
	a = c.do(t, "POST", "/namespaces", `{"name":"Team X","display_name":"X"}`)
	if e := parseErr(t, a); a.status != 400 || e.Key() != "namespace.failed_to_create" || e.Metadata["reason"] != "invalid name" {
		t.Errorf("bad name: %d %s", a.status, a.body)
	}
}

func TestNamespacesBadRequests(t *testing.T) {
	c := newCluster(t, 2*time.Second)
	c.swap("a", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the leader was asked %s %s", r.Method, r.URL)
	}))
	for _, tc := range []struct{ method, target, body, field string }{
		{"GET", "/namespaces?limit=-1", "", "limit"},
		{"GET", "/namespaces?namespace_id=zz", "", "namespace_id"},
		{"GET", "/namespaces?namespace_ids=zz", "", "namespace_ids"},
		{"GET", "/namespaces?namespace=default", "", "namespace"},
		{"POST", "/namespaces", `{"name":"x"}`, "display_name"},
		{"POST", "/namespaces", `{"display_name":"x"}`, "name"},
		{"POST", "/namespaces", `{"name":"x","display_name":"X","extra":true}`, "extra"},
		{"POST", "/namespaces", `{"name":1,"display_name":"X"}`, "name"},
		{"POST", "/namespaces?x=1", `{"name":"x","display_name":"X"}`, "x"},
	} {
		req := httptest.NewRequest(tc.method, tc.target, nil)
		if tc.body != "" {
			req = httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		c.pub.ServeHTTP(w, openapitest.Unchecked(req))
		a := answer{w.Code, w.Body.String()}
		if e := parseErr(t, a); a.status != 400 || e.Metadata["field"] != tc.field {
			t.Errorf("%s %s %s: %d %s, want 400 naming %s", tc.method, tc.target, tc.body, a.status, a.body, tc.field)
		}
	}
}

// TestNamespacesLeaderDown: with the leader unreachable, namespace calls name it, promptly.
func TestNamespacesLeaderDown(t *testing.T) {
	const timeout = 300 * time.Millisecond
	c := newCluster(t, timeout)
	c.srvs["a"].Close()
	for _, tc := range []struct{ method, target, body string }{
		{"GET", "/namespaces", ""},
		{"POST", "/namespaces", `{"name":"x","display_name":"X"}`},
		// b and c cannot resolve a name they have never seen.
		{"GET", "/runners?namespace=" + url.QueryEscape("default"), ""},
	} {
		start := time.Now()
		a := c.do(t, tc.method, tc.target, tc.body)
		if e := parseErr(t, a); a.status != 502 || e.Key() != "datacenter.unreachable" || e.Metadata["datacenter"] != "a" {
			t.Errorf("%s %s: %d %s", tc.method, tc.target, a.status, a.body)
		}
		if took := time.Since(start); took > timeout+hangMargin {
			t.Errorf("%s %s: answered after %s", tc.method, tc.target, took)
		}
	}
}

// TestTokenReachesTheLeader: with an admin token everywhere, the token the client presents
// is what b's api-peer presents to the leader when it resolves a namespace; a wrong one is
// refused before any datacenter is asked.
func TestTokenReachesTheLeader(t *testing.T) {
	c := newClusterWithToken(t, 2*time.Second, "tok")
	c.seedRunners(t, "a", 5, 1, 1_700_000_000_000)
	var page apitypes.RunnersListResponse
	decode(t, c.do(t, "GET", "/runners?namespace=default", ""), &page)
	if len(page.Runners) != 4 { // every fifth is stopped
		t.Errorf("runners: %d", len(page.Runners))
	}
	var created apitypes.NamespacesCreateResponse
	decode(t, c.do(t, "POST", "/namespaces", `{"name":"n2","display_name":"N2"}`), &created)

	c.token = "wrong"
	if a := c.do(t, "GET", "/runners?namespace=n2", ""); a.status != 403 {
		t.Errorf("wrong token: %d %s", a.status, a.body)
	}
	c.token = ""
	if a := c.do(t, "GET", "/runners?namespace=n2", ""); a.status != 401 {
		t.Errorf("no token: %d %s", a.status, a.body)
	}
}
