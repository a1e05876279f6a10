//go:build fdb

package fdb

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	fdbgo "github.com/apple/foundationdb/bindings/go/src/fdb"
	"github.com/berthhq/berth/pkg/udb"
)

// APIVersion is the FoundationDB API version berth selects: 7.3's. The
// installed client library (libfdb_c) must be 7.3.x or newer.
const APIVersion = 730

// defaultConnectTimeout bounds Open's reachability check.
const defaultConnectTimeout = 10 * time.Second

func init() {
	udb.Register("fdb", openURL)
}

var (
	apiOnce sync.Once
	apiErr  error
)

// selectAPIVersion selects the API version once per process, as the binding
// requires.
func selectAPIVersion() error {
	apiOnce.Do(func() {
		if err := fdbgo.APIVersion(APIVersion); err != nil {
			apiErr = fmt.Errorf("fdb: selecting FoundationDB API version %d failed (install the FoundationDB client 7.3.x, libfdb_c): %w", APIVersion, mapErr(err))
		}
	})
	return apiErr
}

// shared holds one binding database per cluster file, with its users: the
// binding caches databases by cluster file itself, so closing one handle
// would close it for every other user.
var shared struct {
	sync.Mutex
	dbs map[string]*sharedDB
}

type sharedDB struct {
	db   fdbgo.Database
	refs int
}

// openURL opens fdb://CLUSTER_FILE; see the package documentation.
func openURL(ctx context.Context, u *url.URL) (udb.Database, error) {
	clusterFile := u.Host + u.Path
	if u.Opaque != "" {
		clusterFile = u.Opaque
	}
	maxWatches := 0
	connectTimeout := defaultConnectTimeout
	q := u.Query()
	for k := range q {
		switch k {
		case "max_watches", "connect_timeout":
		default:
			return nil, fmt.Errorf("fdb: unknown option %q in %q (known: max_watches, connect_timeout)", k, u.Redacted())
		}
	}
	if s := q.Get("max_watches"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("fdb: max_watches=%q: want a positive integer", s)
		}
		maxWatches = n
	}
	if s := q.Get("connect_timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return nil, fmt.Errorf("fdb: connect_timeout=%q: want a duration such as 10s, or 0 to skip the check", s)
		}
		connectTimeout = d
	}
	if clusterFile != "" {
		if _, err := os.Stat(clusterFile); err != nil {
			return nil, fmt.Errorf("fdb: cluster file %q: %w", clusterFile, err)
		}
	}
	if err := selectAPIVersion(); err != nil {
		return nil, err
	}

	d := &database{clusterFile: clusterFile}
	if maxWatches > 0 {
		// A database option: give this handle a connection of its own so
		// that it does not change other users' limit.
		conn, err := connectionString(clusterFile)
		if err != nil {
			return nil, err
		}
		db, err := fdbgo.OpenWithConnectionString(conn)
		if err != nil {
			return nil, fmt.Errorf("fdb: opening the cluster of %s: %w", describe(clusterFile), mapErr(err))
		}
		if err := db.Options().SetMaxWatches(int64(maxWatches)); err != nil {
			db.Close()
			return nil, fmt.Errorf("fdb: max_watches=%d: %w", maxWatches, mapErr(err))
		}
		d.db, d.private = db, true
	} else {
		db, err := acquire(clusterFile)
		if err != nil {
			return nil, err
		}
		d.db = db
	}
	if connectTimeout > 0 {
		if err := d.probe(ctx, connectTimeout); err != nil {
			d.Close()
			return nil, err
		}
	}
	return d, nil
}

func acquire(clusterFile string) (fdbgo.Database, error) {
	shared.Lock()
	defer shared.Unlock()
	if s, ok := shared.dbs[clusterFile]; ok {
		s.refs++
		return s.db, nil
	}
	db, err := fdbgo.OpenDatabase(clusterFile)
	if err != nil {
		return fdbgo.Database{}, fmt.Errorf("fdb: opening the cluster of %s: %w", describe(clusterFile), mapErr(err))
	}
	if shared.dbs == nil {
		shared.dbs = map[string]*sharedDB{}
	}
	shared.dbs[clusterFile] = &sharedDB{db: db, refs: 1}
	return db, nil
}

func release(clusterFile string) {
	shared.Lock()
	defer shared.Unlock()
	s, ok := shared.dbs[clusterFile]
	if !ok {
		return
	}
	if s.refs--; s.refs == 0 {
		delete(shared.dbs, clusterFile)
		s.db.Close()
	}
}

// probe takes a read version, so that an unreachable cluster fails Open
// with a clear error instead of hanging the first transaction.
func (d *database) probe(ctx context.Context, timeout time.Duration) error {
	tr, err := d.db.CreateTransaction()
	if err != nil {
		return fmt.Errorf("fdb: %w", mapErr(err))
	}
	defer tr.Cancel()
	if err := tr.Options().SetTimeout(timeout.Milliseconds()); err != nil {
		return fmt.Errorf("fdb: %w", mapErr(err))
	}
	f := tr.GetReadVersion()
	if _, err := await(ctx, f, f.Get); err != nil {
		return fmt.Errorf("fdb: the cluster of %s did not answer within %s (is it up, configured (fdbcli: configure new single memory), and is the cluster file current?): %w",
			describe(d.clusterFile), timeout, err)
	}
	return nil
}

func describe(clusterFile string) string {
	if clusterFile == "" {
		return "the default cluster file ($FDB_CLUSTER_FILE or /etc/foundationdb/fdb.cluster)"
	}
	return strconv.Quote(clusterFile)
}

// connectionString reads the connection string from a cluster file: its
// first line that is neither blank nor a comment.
func connectionString(clusterFile string) (string, error) {
	path := clusterFile
	if path == "" {
		path = os.Getenv("FDB_CLUSTER_FILE")
	}
	if path == "" {
		path = "/etc/foundationdb/fdb.cluster"
	}
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("fdb: reading the cluster file: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	if err := s.Err(); err != nil {
		return "", fmt.Errorf("fdb: reading cluster file %q: %w", path, err)
	}
	return "", fmt.Errorf("fdb: cluster file %q holds no connection string (want a line like description:ID@host:port)", path)
}
