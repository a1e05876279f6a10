// Package metadata checks the metadata a runner or envoy sends at registration: a JSON object of
// bounded size, stored as given.
package metadata
