package postgres

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/berthhq/berth/pkg/udb"
	"github.com/jackc/pgx/v5"
)

func init() {
	udb.Register("postgres", openURL)
	udb.Register("postgresql", openURL)
}

// Options of ours in the URL's query; every other parameter goes to
// PostgreSQL as libpq would pass it (sslmode, search_path, ...).
var ourParams = map[string]string{
	"max_conns":   "connections this process opens (default 8)",
	"max_watches": "outstanding watches in this process (default 10000)",
}

// openURL opens postgres://user:password@host:port/database?params. The
// tables go to the first schema of search_path (search_path=NAME keeps
// several stores in one database).
func openURL(ctx context.Context, u *url.URL) (udb.Database, error) {
	var opts Options
	q := u.Query()
	for name := range ourParams {
		s := q.Get(name)
		if !q.Has(name) {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("postgres: %s=%q: want a positive integer (%s)", name, s, ourParams[name])
		}
		switch name {
		case "max_conns":
			opts.MaxConns = n
		case "max_watches":
			opts.MaxWatches = n
		}
		q.Del(name)
	}
	rest := *u
	rest.RawQuery = q.Encode()
	cfg, err := pgx.ParseConfig(rest.String())
	if err != nil {
		return nil, fmt.Errorf("postgres: invalid URL %s: %w", u.Redacted(), err)
	}
	return Open(ctx, Options{Conn: cfg, MaxConns: opts.MaxConns, MaxWatches: opts.MaxWatches})
}
