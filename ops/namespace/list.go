package namespace

import (
	"cmp"
	"context"
	"slices"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// Limits of List.
const (
	DefaultListLimit = 1000 // the Rivet engine's default for namespaces
	MaxListLimit     = page.MaxLimit
)

// ListInput selects namespaces. Filters combine: a namespace is listed when
// it matches every filter given. A filtered listing is one page of every
// match, as on the Rivet engine: Limit and AfterName apply to the unfiltered
// listing only.
type ListInput struct {
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
	// Name, if set, lists only the namespace with this name.
	Name string
	// NamespaceIDs, if set, lists only these namespaces; unknown ids are
	// skipped.
	NamespaceIDs []id.ID
	// AfterName continues a listing after the namespace with this name (the
	// Cursor of the previous page).
	AfterName string
}

// ListOutput is one page, in name order.
type ListOutput struct {
	Namespaces []Namespace
	// Cursor is the last name of the page, nil on an empty page and on a
	// filtered listing (see page.Cursor); pass it as AfterName.
	Cursor *string
}

// List returns namespaces in name order.
//
// Snapshot reads: a listing may be a few milliseconds stale, and it must not
// make concurrent creations retry. All reads share the transaction's read
// version, so a namespace is listed whole or not at all.
func List(ctx context.Context, r udb.ReadTransaction, in ListInput) (ListOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListOutput{}, err
	}
	snap := r.Snapshot()
	var found []Namespace
	switch {
	case len(in.NamespaceIDs) > 0:
		for _, nid := range uniqueIDs(in.NamespaceIDs) {
			ns, ok, err := load(ctx, snap, nid)
			if err != nil {
				return ListOutput{}, err
			}
			if ok && (in.Name == "" || ns.Name == in.Name) {
				found = append(found, ns)
			}
		}
		slices.SortFunc(found, func(a, b Namespace) int { return cmp.Compare(a.Name, b.Name) })
		return ListOutput{Namespaces: found}, nil
	case in.Name != "":
		ns, err := ResolveByName(ctx, snap, ResolveByNameInput{Name: in.Name})
		switch {
		case rerr.Is(err, rerr.CodeNamespaceNotFound):
		case err != nil:
			return ListOutput{}, err
		default:
			found = append(found, ns)
		}
		return ListOutput{Namespaces: found}, nil
	default:
		rng := keys.NamespaceByNameKeyRange()
		begin, end := rng.All()
		if in.AfterName != "" {
			begin, end = rng.After(in.AfterName)
		}
		kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
			udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil {
			return ListOutput{}, err
		}
		for _, kv := range kvs {
			k, err := keys.UnpackNamespaceByNameKey(kv.Key)
			if err != nil {
				return ListOutput{}, corrupt.Mark("namespace", err)
			}
			nid, err := k.Decode(kv.Value)
			if err != nil {
				return ListOutput{}, corrupt.Mark("namespace", err)
			}
			ns, ok, err := load(ctx, snap, nid)
			switch {
			case err != nil:
				return ListOutput{}, err
			case !ok:
				return ListOutput{}, rerr.Corrupt("namespace", "name %q points at %s, which has no record", k.Name, nid)
			}
			found = append(found, ns)
		}
	}
	return ListOutput{Namespaces: found, Cursor: page.Cursor(found, func(n Namespace) string { return n.Name })}, nil
}

// uniqueIDs returns ids without repeats, first occurrence kept.
func uniqueIDs(ids []id.ID) []id.ID {
	seen := make(map[id.ID]bool, len(ids))
	out := make([]id.ID, 0, len(ids))
	for _, v := range ids {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}
