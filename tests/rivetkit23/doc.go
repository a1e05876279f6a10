// Package rivetkit23 is the full-stack test of the current rivetkit (2.3.19, envoy protocol
// v8): a rivetkit app from tests/npm23 run under Node 22 against a berth process, reached
// through the gateway with query routing; actor state lives in SQLite pages berth stores.
package rivetkit23
