// Package apihttp is the HTTP plumbing api-public and api-peer share: the echo server with one rerr error handler, bearer auth, ray ids, strict query and body binding.
// It also holds the client both use to call a peer datacenter's api-peer, and the bounded fan-out over every datacenter.
package apihttp
