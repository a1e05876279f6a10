// Package runner holds the runner operations: register with a stable id and connection fencing,
// get, list by namespace and names, ping, drain, stop, expire and disconnect.
package runner
