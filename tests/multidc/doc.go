// Package multidc tests berth across datacenters with real processes: three `berth start`
// processes on loopback, each with its own file store, listed through each one's public API.
package multidc
