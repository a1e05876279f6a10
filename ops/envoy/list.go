package envoy

import (
	"context"
	"slices"
	"unicode/utf8"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/ops/internal/cursor"
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

// ListInput selects a namespace's envoys.
type ListInput struct {
	Namespace id.ID
	// PoolName, if set, lists only this pool's envoys.
	PoolName string
	// EnvoyKeys, if set, lists only these envoys, in any state (as the
	// Rivet engine's lookup by key does); unknown and invalid keys are left
	// out. They
	// are returned in list order and paged like any listing.
	EnvoyKeys []string
	// Limit is the page size: 0 means DefaultListLimit.
	Limit int
	// Cursor is the previous page's cursor, or a bare decimal create_ts
	// (the Rivet engine's cursor: the page starts at envoys created before
	// that millisecond).
	Cursor string
	// Datacenter is this datacenter's name, reported in each envoy.
	Datacenter string
}

// ListOutput is one page.
type ListOutput struct {
	Envoys []Envoy
	// Cursor names the page's last envoy; nil on an empty page (see
	// page.Cursor).
	Cursor *string
}

// Cursor returns the cursor that continues a listing after the envoy
// (createTs, envoyKey): what List returns for a page ending there, for
// callers that merge pages (the cross-datacenter fan-out). Lists are ordered
// by create_ts descending, then by envoy key bytes descending.
func Cursor(createTs int64, envoyKey string) string { return cursor.Encode(createTs, []byte(envoyKey)) }

// List lists a namespace's active envoys (registered and not expired;
// draining ones included), newest first: create_ts descending, envoys
// created in the same millisecond by key descending. Paging with the
// returned cursor returns every envoy exactly once, even when many share
// one millisecond, since the cursor names the last envoy's (create_ts, key)
// and the next page starts strictly after it.
//
// It reads the active index by pool or by namespace. Snapshot reads: a
// listing may be a few milliseconds stale, and must not make registrations
// and pings retry. Index entries and envoy data are read at one read
// version, and an envoy is registered or expired in one transaction, so a
// listing never shows an envoy half-registered, nor one twice.
func List(ctx context.Context, r udb.ReadTransaction, in ListInput) (ListOutput, error) {
	limit, err := page.Limit(in.Limit, DefaultListLimit)
	if err != nil {
		return ListOutput{}, err
	}
	pos, err := cursor.DecodeFor(in.Cursor, func(tie []byte) bool { return len(tie) > 0 && utf8.Valid(tie) })
	if err != nil {
		return ListOutput{}, err
	}
	snap := r.Snapshot()
	var found []Envoy
	if len(in.EnvoyKeys) > 0 {
		found, err = listByKeys(ctx, snap, in, pos, limit)
	} else {
		found, err = listByIndex(ctx, snap, in, pos, limit)
	}
	if err != nil {
		return ListOutput{}, err
	}
	return ListOutput{Envoys: found, Cursor: page.Cursor(found, func(e Envoy) string { return Cursor(e.CreateTs, e.EnvoyKey) })}, nil
}

// listByIndex scans an active index in reverse from the cursor and loads up
// to n envoys.
func listByIndex(ctx context.Context, snap udb.ReadTransaction, in ListInput, pos *cursor.Position, n int) ([]Envoy, error) {
	var rng keys.CreateTsRange[string]
	var unpack func([]byte) (string, error)
	if in.PoolName == "" {
		rng = keys.ActiveEnvoyKeyRange(in.Namespace)
		unpack = func(b []byte) (string, error) { k, err := keys.UnpackActiveEnvoyKey(b); return k.EnvoyKey, err }
	} else {
		rng = keys.ActiveEnvoyByNameKeyRange(in.Namespace, in.PoolName)
		unpack = func(b []byte) (string, error) { k, err := keys.UnpackActiveEnvoyByNameKey(b); return k.EnvoyKey, err }
	}
	begin, end := rng.All()
	switch {
	case pos == nil:
	case pos.Legacy:
		begin, end = rng.BeforeTs(pos.CreateTs)
	default:
		begin, end = rng.Before(pos.CreateTs, string(pos.Tie))
	}
	kvs, err := snap.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(end),
		udb.RangeOptions{Limit: n, Reverse: true, Mode: udb.StreamingModeWantAll}).All(ctx)
	if err != nil {
		return nil, err
	}
	envoyKeys := make([]string, len(kvs))
	for i, kv := range kvs {
		key, err := unpack(kv.Key)
		if err != nil {
			return nil, corrupt.Mark("envoy index", err)
		}
		envoyKeys[i] = key
	}
	loads := startLoads(ctx, snap, in.Namespace, envoyKeys)
	out := make([]Envoy, 0, len(kvs))
	for _, l := range loads {
		e, found, err := l.finish(in.Datacenter)
		switch {
		case err != nil:
			return nil, err
		case !found:
			return nil, rerr.Corrupt("envoy index", "entry for %q, which has no record", l.key)
		}
		out = append(out, e)
	}
	return out, nil
}

// listByKeys loads the envoys named in in.EnvoyKeys that match the pool
// filter, sorts them in list order and returns up to n after the cursor.
func listByKeys(ctx context.Context, snap udb.ReadTransaction, in ListInput, pos *cursor.Position, n int) ([]Envoy, error) {
	seen := make(map[string]bool, len(in.EnvoyKeys))
	var envoyKeys []string
	for _, k := range in.EnvoyKeys {
		// A key that cannot be registered names no envoy (and may be too
		// long for a udb key).
		if !seen[k] && checkEnvoyKey(k) == nil {
			seen[k] = true
			envoyKeys = append(envoyKeys, k)
		}
	}
	loads := startLoads(ctx, snap, in.Namespace, envoyKeys)
	var out []Envoy
	for _, l := range loads {
		e, found, err := l.finish(in.Datacenter)
		switch {
		case err != nil:
			return nil, err
		case !found,
			in.PoolName != "" && e.PoolName != in.PoolName,
			pos != nil && !pos.After(e.CreateTs, []byte(e.EnvoyKey)):
			continue
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Envoy) int {
		return cursor.Compare(a.CreateTs, []byte(a.EnvoyKey), b.CreateTs, []byte(b.EnvoyKey))
	})
	return out[:min(n, len(out))], nil
}
