package embedded

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	"github.com/berthhq/berth/pkg/udb"
)

func init() {
	udb.Register("file", openURL)
	udb.Register("mem", openURL)
}

// openURL opens file://PATH or mem:// with optional query parameters:
// max_watches=N and sync=false (skip fsync; see Options.NoSync).
func openURL(_ context.Context, u *url.URL) (udb.Database, error) {
	opts := Options{InMemory: u.Scheme == "mem"}
	if !opts.InMemory {
		opts.Dir = u.Host + u.Path
		if opts.Dir == "" {
			return nil, fmt.Errorf("embedded: %q names no directory; use file:///absolute/path or file://relative/path", u.String())
		}
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "max_watches", "sync":
		default:
			return nil, fmt.Errorf("embedded: unknown option %q in %q (known: max_watches, sync)", k, u.String())
		}
	}
	if s := q.Get("max_watches"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("embedded: max_watches=%q: want a positive integer", s)
		}
		opts.MaxWatches = n
	}
	if s := q.Get("sync"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			return nil, fmt.Errorf("embedded: sync=%q: want true or false", s)
		}
		opts.NoSync = !b
	}
	return Open(opts)
}
