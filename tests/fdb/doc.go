// Package fdb holds berth's FoundationDB tests. Built with -tags fdb they run
// the udb conformance suite, an engine smoke test and an export/import
// round trip against a real cluster: the one named by
// BERTH_TEST_FDB_CLUSTER_FILE, or else one they start in Docker
// (foundationdb/foundationdb:7.3.x, through testcontainers-go), skipping
// with a message where Docker is not available. Without the tag, the
// data-compatibility tests run: they need no FoundationDB.
package fdb
