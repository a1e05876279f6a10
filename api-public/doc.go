// Package apipublic is the public REST API served on the guard port (6420), the one Rivet clients call.
// It answers what needs no store from config, and asks every datacenter's api-peer (the local one in process) for the rest, merging the answers.
package apipublic
