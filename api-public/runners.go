package apipublic

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"

	"github.com/labstack/echo/v4"

	apitypes "github.com/berthhq/berth/api-types"
	"github.com/berthhq/berth/ops/runner"
	"github.com/berthhq/berth/pkg/apihttp"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
)

// listRunners serves GET /runners: every datacenter's page, merged.
//
// Each datacenter is asked for the first limit runners after the cursor, in the list order
// (create_ts descending, then runner id bytes descending), which is one total order across
// datacenters since runner ids are unique. The merged page is the first limit runners of the
// union, and its cursor names the last one (runner.Cursor, the same cursor a datacenter
// returns), so the next page asks every datacenter for the runners strictly after it: every
// runner appears exactly once. As on the Rivet engine, every page with runners has a
// cursor and a listing ends with an empty page, whose cursor is null. A bare decimal
// create_ts cursor (the Rivet engine's) is passed on as it is.
//
// With runner_id filters, a datacenter is asked only for the ids it created (an id carries
// its datacenter's label) and not asked at all if it created none of them; ids of labels not
// in the topology match nothing.
func (s *Server) listRunners(c echo.Context) error {
	var q apitypes.RunnersListQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	if err := q.Check(); err != nil {
		return err
	}
	dcs := s.deps.Topology.Datacenters
	var byLabel map[uint16][]id.ID
	if len(q.RunnerIDs) > 0 {
		byLabel = map[uint16][]id.ID{}
		for _, rid := range q.RunnerIDs {
			byLabel[rid.Label()] = append(byLabel[rid.Label()], rid)
		}
		dcs = slices.DeleteFunc(slices.Clone(dcs), func(dc apihttp.Datacenter) bool { return len(byLabel[dc.Label]) == 0 })
	}
	dcQuery := func(dc apihttp.Datacenter) apitypes.RunnersListQuery {
		dq := q
		if byLabel != nil {
			dq.RunnerIDs = byLabel[dc.Label]
		}
		return dq
	}
	var local func(context.Context, apihttp.Datacenter) (peerPage, error)
	if p := s.deps.Local; p != nil {
		local = func(ctx context.Context, dc apihttp.Datacenter) (peerPage, error) {
			out, err := p.RunnersPage(ctx, dcQuery(dc))
			if err != nil {
				return peerPage{}, err
			}
			return localRunnersPage(out)
		}
	}
	ctx := c.Request().Context()
	pages, err := fanOutListLocal(ctx, s, dcs, "/runners",
		func(dc apihttp.Datacenter) (url.Values, error) { return apihttp.EncodeQuery(dcQuery(dc)) }, local)
	if err != nil {
		return err
	}
	var all []rawRunner
	for _, p := range pages {
		all = append(all, p.Runners...)
	}
	slices.SortFunc(all, func(a, b rawRunner) int {
		if c := cmp.Compare(b.createTs, a.createTs); c != 0 {
			return c
		}
		return b.id.Compare(a.id)
	})
	onPage := all[:min(len(all), q.Limit)]
	items := make([][]byte, len(onPage))
	for i, r := range onPage {
		items[i] = r.raw
	}
	return writeList(c, "runners", items, page.Cursor(onPage, func(r rawRunner) string { return runner.Cursor(r.createTs, r.id) }))
}

// localRunnersPage is a page of this datacenter's runners as the merge takes it: what
// decoding the api-peer's JSON answer would give, each runner encoded once, all in one
// buffer.
func localRunnersPage(out runner.ListForNsOutput) (peerPage, error) {
	p := peerPage{Runners: make([]rawRunner, len(out.Runners)), Pagination: apihttp.Pagination{Cursor: out.Cursor}}
	buf := make([]byte, 0, 400*len(out.Runners))
	for i := range out.Runners {
		r := &out.Runners[i]
		start := len(buf)
		var err error
		if buf, err = apitypes.AppendRunner(buf, r); err != nil {
			return peerPage{}, rerr.Internal(err)
		}
		p.Runners[i] = rawRunner{createTs: r.CreateTs, id: r.RunnerID, raw: buf[start:len(buf):len(buf)]}
	}
	return p, nil
}

// listRunnerNames serves GET /runners/names: every datacenter's first limit names after the
// cursor, merged, de-duplicated and sorted (byte order, as each datacenter lists them); the
// page is the first limit of those and its cursor the last name, null on an empty page.
// Paging returns every name once.
func (s *Server) listRunnerNames(c echo.Context) error {
	var q apitypes.RunnersNamesQuery
	if err := apihttp.BindQuery(c, &q); err != nil {
		return err
	}
	ctx := c.Request().Context()
	pages, err := fanOutList[apitypes.RunnersNamesResponse](ctx, s, s.deps.Topology.Datacenters, "/runners/names",
		func(apihttp.Datacenter) (url.Values, error) { return apihttp.EncodeQuery(q) })
	if err != nil {
		return err
	}
	names := mergeNames(q.Limit, pages)
	resp := apitypes.RunnersNamesResponse{Names: names, Pagination: apihttp.Pagination{Cursor: page.Cursor(names, func(n string) string { return n })}}
	return c.JSON(http.StatusOK, resp)
}

// mergeNames returns the first limit names of the pages' union, sorted and without
// repeats; never nil.
func mergeNames(limit int, pages []apitypes.RunnersNamesResponse) []string {
	all := []string{}
	for _, p := range pages {
		all = append(all, p.Names...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	return all[:min(len(all), limit)]
}
