package udb

import (
	"context"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
)

// OpenFunc opens a database for a parsed URL of the driver's scheme.
type OpenFunc func(ctx context.Context, u *url.URL) (Database, error)

var registry struct {
	sync.Mutex
	drivers map[string]OpenFunc
}

// notBuiltIn explains schemes that berth knows but this binary lacks.
var notBuiltIn = map[string]string{
	"postgres":   "the PostgreSQL driver is not built into this binary (import github.com/berthhq/berth/pkg/udb/driver/postgres)",
	"postgresql": "the PostgreSQL driver is not built into this binary (import github.com/berthhq/berth/pkg/udb/driver/postgres)",
	"fdb":        "the FoundationDB driver is not built into this binary; rebuild with -tags fdb (go build -tags fdb ./engine/cmd/berth) on a machine with the FoundationDB client 7.3.x installed (package foundationdb-clients: fdb_c.h and libfdb_c, API version 730)",
}

// Register makes a driver available to Open under scheme. It panics if the
// scheme is registered twice: that is a build mistake, not an input error.
func Register(scheme string, open OpenFunc) {
	registry.Lock()
	defer registry.Unlock()
	if registry.drivers == nil {
		registry.drivers = map[string]OpenFunc{}
	}
	if _, dup := registry.drivers[scheme]; dup {
		panic("udb: driver registered twice for scheme " + scheme)
	}
	registry.drivers[scheme] = open
}

// Open opens the database named by rawURL, choosing the driver by scheme:
// file://PATH and mem:// (embedded), postgres://..., fdb://CLUSTER_FILE.
// With any scheme, the query parameter prefix=HEX (PrefixParam) opens a view
// of the store under that key prefix (see WithPrefix); the driver never sees it.
func Open(ctx context.Context, rawURL string) (Database, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("udb: invalid database URL %q: %w", rawURL, err)
	}
	prefix, err := splitPrefixParam(u)
	if err != nil {
		return nil, err
	}
	if u.Scheme == "" {
		return nil, fmt.Errorf("udb: database URL %q has no scheme; use one of %s", rawURL, schemes())
	}
	registry.Lock()
	open := registry.drivers[u.Scheme]
	registry.Unlock()
	if open == nil {
		if why, ok := notBuiltIn[u.Scheme]; ok {
			return nil, fmt.Errorf("udb: cannot open %s:// database: %s", u.Scheme, why)
		}
		return nil, fmt.Errorf("udb: unknown database scheme %q in %q; use one of %s", u.Scheme, rawURL, schemes())
	}
	db, err := open(ctx, u)
	if err != nil || len(prefix) == 0 {
		return db, err
	}
	view, err := WithPrefix(db, prefix)
	if err != nil {
		db.Close()
		return nil, err
	}
	return view, nil
}

func schemes() string {
	registry.Lock()
	defer registry.Unlock()
	var s []string
	for k := range registry.drivers {
		s = append(s, k+"://")
	}
	sort.Strings(s)
	if len(s) == 0 {
		return "(none registered: import a driver package)"
	}
	return strings.Join(s, ", ")
}
