// Package openapitest checks HTTP exchanges with the public API against its contract, api-public/openapi.yaml, for use in tests.
// Wrap a server handler with Handler, or a client transport with NewValidatingTransport, and every request and response is validated.
package openapitest
