// Package keyres holds the operations that keep an actor key unique across datacenters: the
// leader datacenter's reservations (Reserve, Replace, Release) and, in every datacenter, the
// fence that settles whether a reserved actor id was created (Fence). They are pure
// transactional operations; engine/pegboard runs the protocol around them (docs/design.md,
// "Keys across datacenters").
package keyres
