// Package pubsub is how engine nodes of one datacenter talk: publish to every subscriber
// of a subject, to one member of a queue group, or ask and wait for one reply. Drivers:
// memory (one process) and NATS (several nodes).
package pubsub
