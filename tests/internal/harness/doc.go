// Package harness runs the processes of the integration tests in tests/: the berth binary
// (built once per test binary) as `berth start` on loopback ports, and helper processes (node
// scripts in tests/npm, Go programs) whose JSON-lines output the tests await.
//
// A test package calls Main from its TestMain; BERTH_TEST_BINARY names a prebuilt berth
// binary to use instead of building one.
package harness
