package runner

import (
	"context"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/page"
	"github.com/berthhq/berth/pkg/udb"
)

// ListNamesInput selects a page of a namespace's runner names.
type ListNamesInput struct {
	Namespace id.ID
	// AfterName continues a listing after this name (the previous page's
	// cursor); "" starts at the first name.
	AfterName string
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
}

// ListNamesOutput is one page of names in byte order.
type ListNamesOutput struct {
	Names []string
	// Cursor is the page's last name; nil on an empty page.
	Cursor *string
}

// ListNames lists the runner names ever registered in the namespace, in
// byte order, scanning forward after the cursor name.
//
// Snapshot reads: a listing may be a few milliseconds stale and must not
// make registrations retry.
func ListNames(ctx context.Context, r udb.ReadTransaction, in ListNamesInput) (ListNamesOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListNamesOutput{}, err
	}
	rng := keys.RunnerNameKeyRange(in.Namespace)
	begin, end := rng.All()
	if in.AfterName != "" {
		begin, end = rng.After(in.AfterName)
	}
	kvs, err := r.Snapshot().GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: limit, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return ListNamesOutput{}, err
	}
	out := ListNamesOutput{Names: make([]string, 0, len(kvs))}
	for _, kv := range kvs {
		k, err := keys.UnpackRunnerNameKey(kv.Key)
		if err != nil {
			return ListNamesOutput{}, corrupt.Mark("runner name index", err)
		}
		out.Names = append(out.Names, k.Name)
	}
	out.Cursor = page.Cursor(out.Names, func(n string) string { return n })
	return out, nil
}
