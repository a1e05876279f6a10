package runnerconfig

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Limits of List.
const (
	DefaultListLimit = 100 // the API's default
	MaxListLimit     = page.MaxLimit
)

// ListInput selects runner configs of one namespace. Filters combine: a
// config is listed when it matches every filter given.
type ListInput struct {
	Namespace id.ID
	// Variant, if set, lists only configs of that variant.
	Variant *keys.RunnerConfigVariant
	// Names, if set, lists every config of these names (names without a
	// config are skipped) on one page: Limit and Cursor are not looked at.
	Names []string
	// Cursor is the previous page's Cursor ("" for the first page), of the
	// form "{variant}:{name}": the page continues after name. A cursor
	// names the variant the listing was filtered by, or none ("" before the
	// colon) for an unfiltered listing, so that a cursor passed without the
	// variant parameter continues the same listing. Variant, when given,
	// wins over the cursor's (as in Rivet).
	Cursor string
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
}

// ListOutput is one page, in name order (byte order of the UTF-8).
type ListOutput struct {
	Configs []Entry
	// Cursor is "{variant}:{name}" of the page's last config; nil on an
	// empty page and when listing by Names (as api-peer does on Rivet).
	Cursor *string
}

// List returns a page of the namespace's runner configs in name order,
// each with its protocol version.
//
// Without a name filter it scans one index: the by-variant index of the
// variant filtered by, else the data keys (where each config's protocol
// version sorts right after it, so the page needs no other read). With
// names it reads each named config.
//
// Snapshot reads: a listing may be a few milliseconds stale and must not
// make writers retry. A config and its by-variant copy are written in one
// transaction, so one read version sees them agree.
func List(ctx context.Context, r udb.ReadTransaction, in ListInput) (ListOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListOutput{}, err
	}
	if in.Variant != nil && !in.Variant.Valid() {
		return ListOutput{}, rerr.BadRequest("variant", "want normal or serverless")
	}
	variant, after, err := parseCursor(in.Cursor)
	if err != nil {
		return ListOutput{}, err
	}
	if in.Variant != nil {
		variant = in.Variant
	}
	snap := r.Snapshot()
	if len(in.Names) > 0 {
		// Every named config, as on the Rivet engine: no page, no cursor.
		found, err := listNames(ctx, snap, in.Namespace, in.Names, variant)
		if err != nil {
			return ListOutput{}, err
		}
		return ListOutput{Configs: found}, withPoolErrors(ctx, snap, in.Namespace, found)
	}
	var found []Entry
	switch {
	case variant != nil:
		found, err = listVariant(ctx, snap, in.Namespace, *variant, after, limit)
	default:
		found, err = listAll(ctx, snap, in.Namespace, after, limit)
	}
	if err != nil {
		return ListOutput{}, err
	}
	out := ListOutput{Configs: found[:min(len(found), limit)]}
	out.Cursor = page.Cursor(out.Configs, func(e Entry) string { return formatCursor(variant, e.Name) })
	return out, withPoolErrors(ctx, snap, in.Namespace, out.Configs)
}

// listNames reads each named config, in name order, keeping those of the
// variant (if given).
func listNames(ctx context.Context, r udb.ReadTransaction, ns id.ID, names []string,
	variant *keys.RunnerConfigVariant) ([]Entry, error) {
	names = slices.Clone(names)
	slices.Sort(names)
	names = slices.Compact(names)
	for _, name := range names {
		if err := CheckName("runner_name", name); err != nil {
			return nil, err
		}
	}
	var out []Entry
	for _, name := range names {
		e, found, err := load(ctx, r, ns, name)
		switch {
		case err != nil:
			return nil, err
		case !found, variant != nil && e.Config.Variant() != *variant:
			continue
		}
		out = append(out, e)
	}
	return out, nil
}

// listVariant scans the by-variant index of one variant after the cursor
// name: at most limit+1 configs, then the protocol versions of the first
// limit.
func listVariant(ctx context.Context, r udb.ReadTransaction, ns id.ID, v keys.RunnerConfigVariant,
	after *string, limit int) ([]Entry, error) {
	rng := keys.RunnerConfigByVariantKeyRange(ns, v)
	begin, end := rng.All()
	if after != nil {
		begin, end = rng.After(*after)
	}
	kvs, err := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit + 1, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(kvs))
	for i, kv := range kvs {
		k, err := keys.UnpackRunnerConfigByVariantKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner config index", err)
		}
		cfg, err := k.Decode(kv.Value)
		if err != nil {
			return nil, corrupt.Mark("runner config index", err)
		}
		if cfg.Variant() != k.Variant {
			return nil, rerr.Corrupt("runner config index", "%q is listed under %s but is %s", k.Name, k.Variant, cfg.Variant())
		}
		e := Entry{Name: k.Name, Config: cfg}
		if err := checkStored(e); err != nil {
			return nil, err
		}
		if i < limit {
			pv, found, err := keys.Get(ctx, r, keys.RunnerConfigProtocolVersionKey{Namespace: ns, Name: k.Name})
			if err != nil {
				return nil, corrupt.Mark("runner config", err)
			}
			if found {
				e.ProtocolVersion = &pv
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// listAll scans the data keys after the cursor name until it has limit+1
// configs. A protocol version sorts right after its config; one whose
// config is gone (Delete keeps it) is skipped.
func listAll(ctx context.Context, r udb.ReadTransaction, ns id.ID, after *string, limit int) ([]Entry, error) {
	rng := keys.RunnerConfigDataKeyRange(ns)
	begin, end := rng.All()
	if after != nil {
		begin, end = rng.After(*after)
	}
	it := r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end), udb.RangeOptions{})
	var out []Entry
	for len(out) <= limit && it.Next(ctx) {
		kv := it.KeyValue()
		if k, err := keys.UnpackRunnerConfigDataKey(kv.Key); err == nil {
			cfg, err := k.Decode(kv.Value)
			if err != nil {
				return nil, corrupt.Mark("runner config", err)
			}
			e := Entry{Name: k.Name, Config: cfg}
			if err := checkStored(e); err != nil {
				return nil, err
			}
			out = append(out, e)
			continue
		}
		k, err := keys.UnpackRunnerConfigProtocolVersionKey(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("runner config", err)
		}
		if n := len(out); n > 0 && out[n-1].Name == k.Name {
			pv, err := k.Decode(kv.Value)
			if err != nil {
				return nil, corrupt.Mark("runner config", err)
			}
			out[n-1].ProtocolVersion = &pv
		}
	}
	if err := it.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// formatCursor is "{variant}:{name}", with an empty variant for an
// unfiltered listing.
func formatCursor(v *keys.RunnerConfigVariant, name string) string {
	if v == nil {
		return ":" + name
	}
	return v.String() + ":" + name
}

// parseCursor splits a cursor into the variant it names (nil for none) and
// the name to continue after (nil for the first page). Anything that is not
// "{variant}:{name}" with a known or empty variant is api.bad_request
// naming "cursor".
func parseCursor(c string) (*keys.RunnerConfigVariant, *string, error) {
	if c == "" {
		return nil, nil, nil
	}
	vs, name, ok := strings.Cut(c, ":")
	if !ok {
		return nil, nil, rerr.BadRequest("cursor", "want the pagination.cursor of a previous page, {variant}:{name}")
	}
	if err := CheckName("cursor", name); err != nil {
		return nil, nil, err
	}
	if vs == "" {
		return nil, &name, nil
	}
	v, ok := keys.ParseRunnerConfigVariant(vs)
	if !ok {
		return nil, nil, rerr.BadRequest("cursor", "unknown variant "+strconv.Quote(vs)+"; want normal or serverless")
	}
	return &v, &name, nil
}

// CheckCursor reports a cursor List would refuse, as api.bad_request naming
// "cursor", so that a caller can refuse it before asking anyone.
func CheckCursor(cursor string) error {
	_, _, err := parseCursor(cursor)
	return err
}
