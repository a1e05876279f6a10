// Package apipeer is the per-datacenter REST API (default port 6421): it answers from this datacenter's store only.
// api-public calls it, here and in every other datacenter, with the same paths and query strings; routes.go lists its endpoints.
package apipeer
