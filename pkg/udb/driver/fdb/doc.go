// Package fdb is berth's udb driver for FoundationDB: fdb://CLUSTER_FILE
// opens the cluster the file names, through the official Go binding
// (github.com/apple/foundationdb/bindings/go, API version 730).
//
// The driver is compiled only with the build tag fdb, because the binding
// needs the FoundationDB client (fdb_c.h and libfdb_c, from the
// foundationdb-clients 7.3.x package): go build -tags fdb. Without the tag
// this package is empty and udb.Open("fdb://...") returns an error that says
// how to build it.
//
// The adapter is thin: FoundationDB implements every semantic udb names, and
// the shared conformance suite (pkg/udb/udbtest) checks it (tests/fdb runs it
// against a real cluster). What the adapter adds:
//
//   - one API-version selection and one network thread per process, started
//     by the binding when the first database opens and never stopped (the
//     binding cannot restart it);
//   - FoundationDB error codes passed through unchanged as udb.Error, so
//     udb.HasCode and the retry predicates work as on every driver;
//   - futures resolved inside the synchronous udb methods; a context that
//     ends while one waits cancels that future (for a range read, whose batch
//     futures the binding keeps to itself, it cancels the transaction) and
//     the call returns the context's error;
//   - databases shared per cluster file and closed with their last user.
//
// URL: fdb://path/to/fdb.cluster (relative), fdb:///etc/foundationdb/fdb.cluster
// (absolute), or fdb:// for FoundationDB's default cluster file
// ($FDB_CLUSTER_FILE, else /etc/foundationdb/fdb.cluster). Query parameters:
// max_watches=N (the database's watch limit, default 10,000; gives the
// handle a connection of its own) and connect_timeout=DURATION (how long Open
// waits for a read version to prove the cluster is reachable, default 10s;
// 0 skips the check).
package fdb
