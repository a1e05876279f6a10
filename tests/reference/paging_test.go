package reference

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

func init() {
	register(
		scenario{name: "paging_actors", doc: "every page size over actors, by name, key and ids; actor names, namespaces, runner configs; bad cursors and limits", run: pagingActors},
		scenario{name: "paging_runners", doc: "runners and runner names by page; a bad cursor", run: pagingRunners},
		scenario{name: "paging_empty", doc: "every list of an empty namespace", run: pagingEmpty},
		scenario{name: "paging_ties", doc: "40 actors created at once, paged 3 at a time (berth: each exactly once)", run: pagingTies},
	)
}

// pageAll follows a list's cursor from its first page until an empty page or a null cursor
// (at most 10 pages), recording each page as step "<what> page N": its items' count and
// names (itemsOf) and its cursor's type. It returns every item's id in order.
func pageAll(s *Session, what, path, listKey string, limit int) []string {
	s.T.Helper()
	var all []string
	cursor := ""
	for page := 1; page <= 10; page++ {
		p := fmt.Sprintf("%s&limit=%d", path, limit)
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		out := s.MustCall(http.MethodGet, p, nil)
		items := itemsOf(out, listKey)
		all = append(all, items...)
		next, _ := out["pagination"].(map[string]any)["cursor"].(string)
		s.Record(fmt.Sprintf("%s page %d", what, page), map[string]any{"items": items, "pagination": out["pagination"]})
		if len(items) == 0 || next == "" {
			break
		}
		cursor = next
	}
	return all
}

// itemsOf lists a page's items: the ids of a list of objects (actor_id, runner_id,
// envoy_key, name), a list of names, or the keys of a map (names).
func itemsOf(out map[string]any, listKey string) []string {
	items := []string{}
	switch v := out[listKey].(type) {
	case []any:
		for _, x := range v {
			o, ok := x.(map[string]any)
			if !ok {
				items = append(items, fmt.Sprint(x))
				continue
			}
			for _, k := range []string{"actor_id", "runner_id", "envoy_key", "name"} {
				if id, ok := o[k].(string); ok {
					items = append(items, id)
					break
				}
			}
		}
	case map[string]any:
		items = append(items, sortedKeys(v)...)
	}
	return items
}

// nextMilli waits until the wall clock's millisecond changes, so that the next create has a
// create_ts of its own (lists order by it; ties are pagingTies's).
func nextMilli() {
	start := time.Now().UnixMilli()
	for time.Now().UnixMilli() == start {
		time.Sleep(100 * time.Microsecond)
	}
}

// pagingActors: three actors of one name and two of others, listed with every page size,
// then their names; a bad cursor and a bad limit.
func pagingActors(s *Session) {
	s.RunnerConfig("pool")
	var ids []string
	for i, name := range []string{"a", "a", "a", "b", "c"} {
		body := map[string]any{"name": name, "runner_name_selector": "pool", "crash_policy": "destroy"}
		if i == 1 {
			body["key"] = "k"
		}
		out := s.MustCall(http.MethodPost, "/actors?namespace={ns}", body)
		aid := out["actor"].(map[string]any)["actor_id"].(string)
		ids = append(ids, aid)
		s.Record(fmt.Sprintf("create %d", i), aid)
		nextMilli()
	}
	for _, limit := range []int{1, 2, 3, 4} {
		pageAll(s, fmt.Sprintf("actors limit %d", limit), "/actors?namespace={ns}&name=a", "actors", limit)
	}
	// By key: on the reference the cursor of the key's page leads to the same page again.
	first := s.MustCall(http.MethodGet, "/actors?namespace={ns}&name=a&key=k&limit=1", nil)
	s.Record("actors by key page 1", map[string]any{"items": itemsOf(first, "actors"), "pagination": first["pagination"]})
	if c, ok := first["pagination"].(map[string]any)["cursor"].(string); ok {
		next := s.MustCall(http.MethodGet, "/actors?namespace={ns}&name=a&key=k&limit=1&cursor="+url.QueryEscape(c), nil)
		s.Record("actors by key page 2", map[string]any{"items": itemsOf(next, "actors"), "pagination": next["pagination"]})
	}
	pageAll(s, "actors by ids", "/actors?namespace={ns}&actor_ids="+strings.Join(ids[:3], ","), "actors", 2)
	var nsIDs []string
	for _, n := range []string{"x", "a", "m"} {
		out := s.MustCall(http.MethodPost, "/namespaces", map[string]any{"name": s.NS + "-" + n, "display_name": n})
		nsIDs = append(nsIDs, out["namespace"].(map[string]any)["namespace_id"].(string))
		nextMilli()
	}
	// By ids: every match on one page; the reference's order varies, so they are recorded
	// sorted.
	byIDs := s.MustCall(http.MethodGet, "/namespaces?limit=1&namespace_ids="+strings.Join(nsIDs, ","), nil)
	names := itemsOf(byIDs, "namespaces")
	slices.Sort(names)
	s.Record("namespaces by ids", map[string]any{"items": names, "pagination": byIDs["pagination"]})
	pageAll(s, "names limit 2", "/actors/names?namespace={ns}", "names", 2)
	pageAll(s, "names limit 5", "/actors/names?namespace={ns}", "names", 5)
	pageAll(s, "namespaces", "/namespaces?name="+s.NS, "namespaces", 1)
	pageAll(s, "runner configs", "/runner-configs?namespace={ns}", "runner_configs", 1)
	for _, c := range []string{"garbage", "-1", "99999999999999999999"} {
		r := s.Do(Request{Method: http.MethodGet, Path: "/actors?namespace={ns}&name=a&cursor=" + url.QueryEscape(c)})
		s.Record("actors cursor "+c, errorOrCount(r, "actors"))
	}
	s.Check("names cursor garbage", Request{Method: http.MethodGet, Path: "/actors/names?namespace={ns}&cursor=%00%ff"})
	for _, l := range []string{"0", "-1", "x", "100000"} {
		r := s.Do(Request{Method: http.MethodGet, Path: "/actors?namespace={ns}&name=a&limit=" + l})
		s.Record("actors limit "+l, errorOrCount(r, "actors"))
	}
}

// errorOrCount records an answer as its error or, for a 200, the number of items listed
// and the pagination.
func errorOrCount(r Reply, listKey string) map[string]any {
	if r.Status != http.StatusOK {
		return errorOf(r)
	}
	out, _ := r.JSON().(map[string]any)
	return map[string]any{"status": r.Status, "items": len(itemsOf(out, listKey)), "pagination": out["pagination"]}
}

// pagingRunners: two runners of one pool and one of another, listed by page.
func pagingRunners(s *Session) {
	for i, pool := range []string{"p1", "p1", "p2"} {
		r := s.StartRunner(RunnerOptions{Pool: pool})
		s.Record(fmt.Sprintf("runner %d", i), r.ID)
		nextMilli()
	}
	// A runner is told it is connected before the reference has listed it (seen once in CI:
	// the first page lacked the newest runner), so wait until all three are listed.
	s.Eventually("three runners listed", 30*time.Second, func() bool {
		out := s.MustCall(http.MethodGet, "/runners?namespace={ns}", nil)
		return len(itemsOf(out, "runners")) == 3
	})
	pageAll(s, "runners limit 1", "/runners?namespace={ns}", "runners", 1)
	pageAll(s, "runners limit 2", "/runners?namespace={ns}", "runners", 2)
	pageAll(s, "runners of p1", "/runners?namespace={ns}&name=p1", "runners", 1)
	pageAll(s, "runner names", "/runners/names?namespace={ns}", "names", 1)
	s.Record("runners cursor garbage", errorOrCount(s.Do(Request{Method: http.MethodGet, Path: "/runners?namespace={ns}&cursor=garbage"}), "runners"))
}

// pagingEmpty: every list of a namespace with nothing in it.
func pagingEmpty(s *Session) {
	for _, l := range []struct{ path, key string }{
		{"/actors?namespace={ns}&name=a", "actors"},
		{"/actors/names?namespace={ns}", "names"},
		{"/runners?namespace={ns}", "runners"},
		{"/runners/names?namespace={ns}", "names"},
		{"/envoys?namespace={ns}", "envoys"},
		{"/runner-configs?namespace={ns}", "runner_configs"},
	} {
		s.Check("empty "+l.path, Request{Method: http.MethodGet, Path: l.path})
	}
}

// pagingTies: 40 actors created at once (many in the same millisecond), paged 3 at a time:
// berth returns each exactly once. The reference's create_ts cursor skips actors of a
// millisecond split between pages, so only the count of pages is not compared there.
func pagingTies(s *Session) {
	s.RunnerConfig("pool")
	const n = 40
	created := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r := s.Do(Request{Method: http.MethodPost, Path: "/actors?namespace={ns}",
				Body: map[string]any{"name": "tie", "runner_name_selector": "pool", "crash_policy": "destroy"}})
			if r.Status == http.StatusOK {
				aid := r.JSON().(map[string]any)["actor"].(map[string]any)["actor_id"].(string)
				mu.Lock()
				created[aid] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.Record("created", len(created))
	var seen []string
	cursor := ""
	for range 2 * n {
		p := "/actors?namespace={ns}&name=tie&limit=3"
		if cursor != "" {
			p += "&cursor=" + url.QueryEscape(cursor)
		}
		out := s.MustCall(http.MethodGet, p, nil)
		items := itemsOf(out, "actors")
		seen = append(seen, items...)
		next, _ := out["pagination"].(map[string]any)["cursor"].(string)
		if len(items) == 0 || next == "" {
			break
		}
		cursor = next
	}
	if s.Target.Reference {
		return
	}
	counts := map[string]int{}
	for _, aid := range seen {
		counts[aid]++
	}
	for aid := range created {
		if counts[aid] != 1 {
			s.T.Errorf("actor %s listed %d times", aid, counts[aid])
		}
	}
	if len(seen) != len(created) {
		s.T.Errorf("paging listed %d actors, %d were created", len(seen), len(created))
	}
}
