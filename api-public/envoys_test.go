package apipublic

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/envoy"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/udb"
)

// seedEnvoys registers in datacenter dc the envoys key-<i> (i < n; the same keys in every
// datacenter) and <dc>-<i> for i < n/10, all at nowMs, in pools pool-<i%3>; every seventh
// key-<i> is expired (not listed).
func (c *cluster) seedEnvoys(t *testing.T, dc string, n int, nowMs int64) {
	t.Helper()
	err := udb.Update(bg, c.dbs[dc], func(tx udb.Transaction) error {
		for i := range n {
			for _, key := range []string{fmt.Sprintf("key-%d", i), fmt.Sprintf("%s-%d", dc, i)} {
				if strings.HasPrefix(key, dc) && i >= n/10 {
					continue
				}
				if _, err := envoy.Register(bg, tx, envoy.RegisterInput{Namespace: c.nsID, EnvoyKey: key, PoolName: fmt.Sprintf("pool-%d", i%3),
					Version: 1, ProtocolVersion: 6, ConnID: id.New(1), NowMs: nowMs}); err != nil {
					return err
				}
			}
			if i%7 == 0 {
				if _, err := envoy.Expire(bg, tx, envoy.ExpireInput{Namespace: c.nsID, EnvoyKey: fmt.Sprintf("key-%d", i), NowMs: nowMs + 1}); err != nil {
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

// pageEnvoys follows the cursors of GET /envoys?query with page size limit and returns
// "<datacenter>/<key>" of every envoy listed; it fails on a page over limit, an envoy listed
// twice or out of (create_ts, key, label) descending order.
func (c *cluster) pageEnvoys(t *testing.T, query url.Values, limit int) []string {
	t.Helper()
	q := url.Values{}
	for k, v := range query {
		q[k] = slices.Clone(v)
	}
	q.Set("limit", fmt.Sprint(limit))
	var out []string
	var prev *envoy.Envoy
	for range 10_000 {
		var page apitypes.EnvoysListResponse
		decode(t, c.do(t, "GET", "/envoys?"+q.Encode(), ""), &page)
		if len(page.Envoys) > limit || len(page.Envoys) == 0 && page.Pagination.Cursor != nil {
			t.Fatalf("%s: page of %d, cursor %v", q.Encode(), len(page.Envoys), page.Pagination.Cursor)
		}
		for i := range page.Envoys {
			e := &page.Envoys[i]
			if prev != nil {
				order := []int{int(prev.CreateTs - e.CreateTs), strings.Compare(prev.EnvoyKey, e.EnvoyKey), strings.Compare(prev.Datacenter, e.Datacenter)}
				if i := slices.IndexFunc(order, func(n int) bool { return n != 0 }); i < 0 || order[i] < 0 {
					t.Fatalf("%s: out of order: %s/%s then %s/%s", q.Encode(), prev.Datacenter, prev.EnvoyKey, e.Datacenter, e.EnvoyKey)
				}
			}
			prev = e
			out = append(out, e.Datacenter+"/"+e.EnvoyKey)
		}
		if page.Pagination.Cursor == nil {
			return out
		}
		q.Set("cursor", *page.Pagination.Cursor)
	}
	t.Fatal("paging does not end")
	return nil
}

func TestEnvoysFanOut(t *testing.T) {
	c := newCluster(t, 5*time.Second)
	for _, dc := range []string{"a", "b", "c"} {
		c.seedEnvoys(t, dc, 150, 1_700_000_000_000) // one millisecond, the same keys everywhere
		c.seedEnvoys(t, dc, 12, 1_700_000_000_003)  // registered again: create_ts stays
	}
	want := func(match func(dc string, i int, own bool) bool) []string {
		var out []string
		for _, dc := range []string{"a", "b", "c"} {
			for i := range 150 {
				if i%7 != 0 && match(dc, i, false) {
					out = append(out, dc+"/key-"+fmt.Sprint(i))
				}
				if i < 15 && match(dc, i, true) {
					out = append(out, dc+"/"+dc+"-"+fmt.Sprint(i))
				}
			}
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"namespace=default", want(func(string, int, bool) bool { return true })},
		{"namespace=default&name=pool-1", want(func(_ string, i int, _ bool) bool { return i%3 == 1 })},
		{"namespace=default&envoy_key=key-3&envoy_key=b-3&envoy_key=key-14&envoy_key=zzz",
			append(want(func(dc string, i int, own bool) bool { return !own && i == 3 }), "a/key-14", "b/b-3", "b/key-14", "c/key-14")},
		{"namespace=default&name=pool-0&envoy_key=key-3&envoy_key=key-4", want(func(_ string, i int, own bool) bool { return !own && i == 3 })},
	} {
		q, _ := url.ParseQuery(tc.query)
		slices.Sort(tc.want)
		for _, limit := range []int{1, 7, 100, 1000} {
			got := c.pageEnvoys(t, q, limit)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s limit %d: %d envoys, want %d", tc.query, limit, len(got), len(tc.want))
			}
		}
	}

	// The Rivet engine's bare create_ts cursor is passed on.
	var legacy apitypes.EnvoysListResponse
	decode(t, c.do(t, "GET", "/envoys?namespace=default&limit=10000&cursor=1700000000001", ""), &legacy)
	if n := len(want(func(string, int, bool) bool { return true })); len(legacy.Envoys) != n {
		t.Errorf("legacy cursor: %d envoys, want %d", len(legacy.Envoys), n)
	}
	for _, bad := range []string{"nope", encodeEnvoyCursor(envoyPosition{1, 1, "x"})[:5]} {
		a := c.do(t, "GET", "/envoys?namespace=default&cursor="+url.QueryEscape(bad), "")
		if e := parseErr(t, a); a.status != 400 || e.Metadata["field"] != "cursor" {
			t.Errorf("cursor %q: %d %s", bad, a.status, a.body)
		}
	}
}

func TestEnvoyCursor(t *testing.T) {
	for _, p := range []envoyPosition{{0, 0, "abc"}, {1_700_000_000_000, 3, "key-1"}, {-5, 65535, strings.Repeat("k", 128)}} {
		s := encodeEnvoyCursor(p)
		got, ok := decodeEnvoyCursor(s)
		if !ok || got != p {
			t.Errorf("round trip of %+v: %+v, %v", p, got, ok)
		}
	}
	for _, s := range []string{"", "1700000000000", envoy.Cursor(5, "abc"), "!!", encodeEnvoyCursor(envoyPosition{1, 1, "a\x00b"})} {
		if p, ok := decodeEnvoyCursor(s); ok {
			t.Errorf("%q decoded as %+v", s, p)
		}
	}
	// A datacenter with a lower label also lists the envoys equal to the position's.
	p := envoyPosition{10, 2, "key"}
	if p.peerCursor(1) != envoy.Cursor(10, "key\x00") || p.peerCursor(2) != envoy.Cursor(10, "key") || p.peerCursor(3) != envoy.Cursor(10, "key") {
		t.Error("peer cursors")
	}
}
