// Package client tests the Go API client (sdk/client) where it needs the engine's module:
// against the real public API in process, and against the fake engine of sdk/client/clienttest
// with every exchange checked against api-public/openapi.yaml (api-public/openapitest). It
// also checks that sdk/client/api was generated from the current openapi.yaml. These tests
// live here because the SDK's module must not depend on the engine's.
package client
