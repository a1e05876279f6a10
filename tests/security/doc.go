// Package security tests berth's defences with real processes on loopback: TLS on the guard
// port and api-peer (with the npm runner, the Go SDK and mutual TLS between nodes), the
// client address behind proxies, safe defaults, and the guard's limits under attack
// (slowloris, header bombs, idle connections, WebSocket floods, path tricks, oversized
// bodies). Each attack's test logs its figures in one line starting with "figure:".
package security
