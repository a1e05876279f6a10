// Package harness runs the processes of the integration tests in tests/: the berth binary
// (built once per test binary) as `berth start` on loopback ports, and helper processes (node
// scripts in tests/npm, Go programs) whose JSON-lines output the tests await.
//
// A test package calls Main from its TestMain. The environment variables it reads
// (BERTH_TEST_BINARY, BERTH_TEST_BUILD_TAGS, and BERTH_TEST_DB_URL, which puts every engine
// on one shared store under a random key prefix of its own) are described in
// CONTRIBUTING.md ("Integration tests").
package harness
