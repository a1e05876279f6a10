// Package proc runs helper processes each in its own process group and reads their stdout as
// JSON-line events: the integration tests (through tests/internal/harness) and the side-by-side
// benchmark (bench/compare) share it. It also reads a process's CPU time and memory from /proc.
//
// Nothing here depends on package testing: every wait is bounded and returns an error.
package proc
