// Package fdb is berth's udb driver for FoundationDB: fdb://CLUSTER_FILE
// opens the cluster the file names, through the official Go binding
// (github.com/apple/foundationdb/bindings/go, API version 730).
//
// It is compiled only with the build tag fdb (go build -tags fdb), because the
// binding needs the FoundationDB client library; without the tag this package
// is empty and udb.Open("fdb://...") says how to build it. The adapter is
// thin; docs/udb.md ("The FoundationDB driver") describes what it adds and its
// URL options.
package fdb
