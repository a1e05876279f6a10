// Package actor holds the actor lifecycle as transactional operations: create, place on a
// runner, events from the runner, sleep, wake, crash policies, reschedule, destroy. Each
// operation reads the actor's state record (keys.ActorStateKey) serializably, changes it
// and its indexes in the caller's transaction, and returns Effects — commands to send,
// pools whose queue can move — for the caller to carry out after the commit.
package actor
