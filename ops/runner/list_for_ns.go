package runner

import (
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/ops/internal/cursor"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Limits of ListForNs.
const (
	DefaultListLimit = 100 // the API's default
	MaxListLimit     = page.MaxLimit
)

// ListForNsInput selects a namespace's runners.
type ListForNsInput struct {
	Namespace id.ID
	// Name, if set, lists only runners with this name.
	Name string
	// IncludeStopped lists stopped runners too; by default only those
	// without stop_ts (draining ones included).
	IncludeStopped bool
	// RunnerIDs, if set, lists only these runners (unknown ids, and runners
	// of other namespaces or names, are left out), in list order and paged
	// like any listing.
	RunnerIDs []id.ID
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
	// Cursor is the previous page's cursor, or a bare decimal create_ts
	// (the Rivet engine's cursor: the page starts at runners created before
	// that millisecond).
	Cursor string
	// Datacenter is this datacenter's name, reported in each runner.
	Datacenter string
}

// ListForNsOutput is one page.
type ListForNsOutput struct {
	Runners []Runner
	// Cursor names the page's last runner; nil on an empty page (see
	// page.Cursor).
	Cursor *string
}

// Cursor returns the cursor that continues a listing after the runner
// (createTs, runnerID): what ListForNs returns for a page ending there, for
// callers that merge pages (the cross-datacenter fan-out). Lists are ordered
// by create_ts descending, then by runner id bytes descending.
func Cursor(createTs int64, runnerID id.ID) string { return cursor.Encode(createTs, runnerID[:]) }

// ListForNs lists a namespace's runners, newest first: create_ts
// descending, runners created in the same millisecond by id descending.
// Paging with the returned cursor returns every runner exactly once, even
// when many share one millisecond, since the cursor names the last runner's
// (create_ts, id) and the next page starts strictly after it.
//
// It reads one of four indexes: active or all (IncludeStopped), by name or
// not. Snapshot reads: a listing may be a few milliseconds stale, and must
// not make registrations and pings retry. Index entries and runner data
// are read at one read version, and a runner is registered or stopped in
// one transaction, so a listing never shows a runner half-registered, nor
// one twice.
func ListForNs(ctx context.Context, r udb.ReadTransaction, in ListForNsInput) (ListForNsOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListForNsOutput{}, err
	}
	pos, err := cursor.DecodeFor(in.Cursor, func(tie []byte) bool { return len(tie) == id.Size })
	if err != nil {
		return ListForNsOutput{}, err
	}
	snap := r.Snapshot()
	cursorOf := func(r Runner) string { return Cursor(r.CreateTs, r.RunnerID) }
	var out ListForNsOutput
	if len(in.RunnerIDs) > 0 {
		out.Runners, err = listByIDs(ctx, snap, in, pos, limit)
	} else {
		out.Runners, err = listByIndex(ctx, snap, in, pos, limit)
	}
	if err != nil {
		return ListForNsOutput{}, err
	}
	out.Cursor = page.Cursor(out.Runners, cursorOf)
	return out, nil
}

// listByIndex scans one create_ts index in reverse from the cursor and loads up to n
// runners.
func listByIndex(ctx context.Context, snap udb.ReadTransaction, in ListForNsInput, pos *cursor.Position, n int) ([]Runner, error) {
	var rng keys.CreateTsRange[id.ID]
	switch {
	case in.Name == "" && !in.IncludeStopped:
		rng = keys.ActiveRunnerKeyRange(in.Namespace)
	case in.Name == "":
		rng = keys.AllRunnerKeyRange(in.Namespace)
	case !in.IncludeStopped:
		rng = keys.ActiveRunnerByNameKeyRange(in.Namespace, in.Name)
	default:
		rng = keys.AllRunnerByNameKeyRange(in.Namespace, in.Name)
	}
	begin, end := rng.All()
	switch {
	case pos == nil:
	case pos.Legacy:
		begin, end = rng.BeforeTs(pos.CreateTs)
	default:
		begin, end = rng.Before(pos.CreateTs, id.ID(pos.Tie))
	}
	kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: n, Reverse: true, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	rids := make([]id.ID, len(kvs))
	for i, kv := range kvs {
		_, rid, err := rng.Entry(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner index", err)
		}
		rids[i] = rid
	}
	recs := startRecords(ctx, snap, rids)
	out := make([]Runner, 0, len(kvs))
	var sc scratch
	for _, rec := range recs {
		run, found, err := rec.finish(ctx, snap, in.Datacenter, &sc)
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, rerr.Corrupt("runner index", "entry for %s, which has no record", rec.rid)
		}
		out = append(out, run)
	}
	return out, nil
}

// listByIDs loads the runners named in in.RunnerIDs that match the other
// filters, sorts them in list order and returns up to n after the cursor.
func listByIDs(ctx context.Context, snap udb.ReadTransaction, in ListForNsInput, pos *cursor.Position, n int) ([]Runner, error) {
	seen := make(map[id.ID]bool, len(in.RunnerIDs))
	var rids []id.ID
	for _, rid := range in.RunnerIDs {
		if !seen[rid] {
			seen[rid] = true
			rids = append(rids, rid)
		}
	}
	recs := startRecords(ctx, snap, rids)
	var out []Runner
	var sc scratch
	for _, rec := range recs {
		run, found, err := rec.finish(ctx, snap, in.Datacenter, &sc)
		switch {
		case err != nil:
			return nil, err
		case !found,
			run.NamespaceID != in.Namespace,
			in.Name != "" && run.Name != in.Name,
			!in.IncludeStopped && run.StopTs != nil,
			pos != nil && !pos.After(run.CreateTs, run.RunnerID[:]):
			continue
		}
		out = append(out, run)
	}
	slices.SortFunc(out, func(a, b Runner) int {
		return cursor.Compare(a.CreateTs, a.RunnerID[:], b.CreateTs, b.RunnerID[:])
	})
	return out[:min(n, len(out))], nil
}
