// Package apitypes holds the REST API's request and response types and path parameters,
// shared by api-peer, which serves them for one datacenter, and api-public, which forwards
// and merges them across datacenters.
package apitypes
