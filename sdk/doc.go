// Package sdk documents berth's Go SDK module, github.com/berthhq/berth/sdk: the API client
// (client, with the generated low-level client in client/api), the runner SDK (runner), the
// wire codecs (protocol/runner, protocol/envoy, protocol/bridge, bare), and their test
// support (client/clienttest, runner/runnertest). It has no code of its own.
//
// The SDK is a module of its own, apart from the engine's github.com/berthhq/berth, so that a
// program using it builds with a few small dependencies and none of the engine's (its
// storage drivers, telemetry, test containers). TestDependencies keeps it so. The SDK's tests
// that need the engine live in the engine's module, under tests/sdk.
package sdk
