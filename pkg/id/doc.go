// Package id implements Rivet's Id: 19 bytes (version 1, a UUIDv4, a big-endian u16 datacenter
// label) written as 30 lowercase base36 characters, least significant digit first.
package id
