// Package harness runs the processes of the integration tests in tests/: the berth binary
// (built once per test binary) as `berth start` on loopback ports, and helper processes (node
// scripts in tests/npm, Go programs) whose JSON-lines output the tests await.
//
// A test package calls Main from its TestMain; BERTH_TEST_BINARY names a prebuilt berth
// binary to use instead of building one, and BERTH_TEST_BUILD_TAGS the build tags of the
// binaries it builds (fdb for the FoundationDB driver).
//
// BERTH_TEST_DB_URL runs the engines on a shared store instead of their own: set to a udb URL
// (fdb:///etc/foundationdb/fdb.cluster, postgres://…) that several processes can open,
// every engine started on a mem:// or file:// store uses that store under a fresh random key
// prefix (\xfd"berth-test/" and 8 random bytes, given as ?prefix=HEX), so that engines of
// concurrent tests never meet; an engine keeps its prefix across restarts, engines given the
// same file:// URL share one, and the test's cleanup clears it. `make test-fdb` runs the
// integration tests this way on FoundationDB.
package harness
