// Package security tests berth's defences with real processes on loopback: TLS on the guard
// port and api-peer (with the npm runner, the Go SDK and mutual TLS between nodes), the
// client address behind proxies, and safe defaults.
package security
