package apipeer

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// seedEnvoys registers n envoys key-<i> in pools pool-<i%pools>, all at nowMs; every fifth is
// drained (still listed) and every seventh expired (not listed).
func seedEnvoys(t *testing.T, db udb.Database, ns id.ID, n, pools int, nowMs int64) {
	t.Helper()
	err := udb.Update(bg, db, func(tx udb.Transaction) error {
		for i := range n {
			key := fmt.Sprintf("key-%d", i)
			if _, err := envoy.Register(bg, tx, envoy.RegisterInput{Namespace: ns, EnvoyKey: key, PoolName: fmt.Sprintf("pool-%d", i%pools),
				Version: 1, ProtocolVersion: 6, ConnID: id.New(1), NowMs: nowMs}); err != nil {
				return err
			}
			if i%5 == 0 {
				if _, err := envoy.Drain(bg, tx, envoy.DrainInput{Namespace: ns, EnvoyKey: key, NowMs: nowMs + 1}); err != nil {
					return err
				}
			}
			if i%7 == 0 {
				if _, err := envoy.Expire(bg, tx, envoy.ExpireInput{Namespace: ns, EnvoyKey: key, NowMs: nowMs + 2}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func pageEnvoys(t *testing.T, p *peer, query url.Values, limit int) []envoy.Envoy {
	t.Helper()
	q := maps(query)
	q.Set("limit", fmt.Sprint(limit))
	var all []envoy.Envoy
	for range 10_000 {
		var page apitypes.EnvoysListResponse
		decode(t, do(t, p.h, "GET", "/envoys?"+q.Encode(), "", false), &page)
		if len(page.Envoys) > limit || len(page.Envoys) == 0 && page.Pagination.Cursor != nil {
			t.Fatalf("page of %d, limit %d, cursor %v", len(page.Envoys), limit, page.Pagination.Cursor)
		}
		all = append(all, page.Envoys...)
		if page.Pagination.Cursor == nil {
			return all
		}
		q.Set("cursor", *page.Pagination.Cursor)
	}
	t.Fatal("paging does not end")
	return nil
}

func TestEnvoysList(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	seedEnvoys(t, p.db, p.defNsID, 210, 3, 1_700_000_000_000) // one millisecond
	listed := func(i int) bool { return i%7 != 0 }
	for _, tc := range []struct {
		query string
		match func(i int) bool
	}{
		{"namespace=default", listed},
		{"namespace=default&name=pool-2", func(i int) bool { return listed(i) && i%3 == 2 }},
		{"namespace=default&name=nope", func(int) bool { return false }},
		{"namespace=default&envoy_key=key-1&envoy_key=key-5&envoy_key=key-7&envoy_key=key-8&envoy_key=no&envoy_key=key-1", func(i int) bool { return i == 1 || i == 5 || i == 7 || i == 8 }}, // by key, expired ones too
		{"namespace=default&name=pool-1&envoy_key=key-1&envoy_key=key-2&envoy_key=key-4", func(i int) bool { return i == 1 || i == 4 }},
	} {
		want := map[string]bool{}
		for i := range 210 {
			if tc.match(i) {
				want[fmt.Sprintf("key-%d", i)] = true
			}
		}
		q, _ := url.ParseQuery(tc.query)
		for _, limit := range []int{1, 7, 100, 1000} {
			got := pageEnvoys(t, p, q, limit)
			var keys []string
			for i, e := range got {
				keys = append(keys, e.EnvoyKey)
				if !want[e.EnvoyKey] || e.Datacenter != "a" || e.NamespaceID != p.defNsID {
					t.Fatalf("%s: %+v not wanted", tc.query, e)
				}
				if i > 0 && (got[i-1].CreateTs < e.CreateTs || got[i-1].CreateTs == e.CreateTs && got[i-1].EnvoyKey <= e.EnvoyKey) {
					t.Fatalf("%s: out of order at %d", tc.query, i)
				}
			}
			if len(keys) != len(want) || len(slices.Compact(slices.Sorted(slices.Values(keys)))) != len(want) {
				t.Errorf("%s limit %d: %d envoys, want %d", tc.query, limit, len(keys), len(want))
			}
		}
	}
	var drained apitypes.EnvoysListResponse
	decode(t, do(t, p.h, "GET", "/envoys?namespace=default&envoy_key=key-5", "", false), &drained)
	if len(drained.Envoys) != 1 || drained.Envoys[0].StopTs == nil || *drained.Envoys[0].StopTs != 1_700_000_000_001 {
		t.Errorf("a drained envoy: %+v", drained.Envoys)
	}
}

func TestEnvoysErrors(t *testing.T) {
	p := newPeer(t, twoDCs(1), nil)
	for _, tc := range []struct {
		query      string
		status     int
		key, field string
		unchecked  bool
	}{
		{"", 400, "api.bad_request", "namespace", true},
		{"namespace=nope", 404, "namespace.not_found", "", false},
		{"namespace=default&name=", 400, "api.bad_request", "name", false},
		{"namespace=default&limit=-1", 400, "api.bad_request", "limit", true},
		{"namespace=default&cursor=zzz", 400, "api.bad_request", "cursor", false},
		{"namespace=default&envoy_keys=a,b", 400, "api.bad_request", "envoy_keys", true},
		{"namespace=default&include_stopped=true", 400, "api.bad_request", "include_stopped", true},
	} {
		a := do(t, p.h, "GET", "/envoys?"+tc.query, "", tc.unchecked)
		key, field := errKey(t, a)
		if a.status != tc.status || key != tc.key || field != tc.field {
			t.Errorf("GET /envoys?%s: %d %s (field %q), want %d %s (field %q)", tc.query, a.status, key, field, tc.status, tc.key, tc.field)
		}
	}
}
