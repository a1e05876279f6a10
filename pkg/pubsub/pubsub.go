package pubsub

import (
	"context"
	"errors"
)

// PubSub is a message bus. Subjects are dot-separated tokens ("pegboard.runner.<id>");
// delivery is at most once, in publish order per publisher and subject.
type PubSub interface {
	// Publish sends data to every subscriber of subject, and to one member of each
	// queue group on it.
	Publish(ctx context.Context, subject string, data []byte) error
	// Subscribe receives every message published on subject.
	Subscribe(ctx context.Context, subject string) (Subscription, error)
	// QueueSubscribe receives the messages on subject that its group hands to it: each
	// message goes to one member of the group.
	QueueSubscribe(ctx context.Context, subject, group string) (Subscription, error)
	// Request publishes data on subject and waits for the first reply, until ctx ends;
	// with no subscriber it fails with ErrNoResponders.
	Request(ctx context.Context, subject string, data []byte) ([]byte, error)
	// Close ends every subscription and frees the connection.
	Close() error
}

// Subscription is a stream of messages.
type Subscription interface {
	// Next waits for the next message; it fails with ErrClosed after Unsubscribe or
	// Close, or with ctx's error.
	Next(ctx context.Context) (Message, error)
	// Unsubscribe ends the subscription; messages not yet read are dropped.
	Unsubscribe() error
}

// Message is a received message. Respond answers a Request.
type Message struct {
	Subject string
	Data    []byte
	respond func([]byte) error
}

// Respond answers the request this message carries; it fails with ErrNoReply for a
// plain publish.
func (m Message) Respond(data []byte) error {
	if m.respond == nil {
		return ErrNoReply
	}
	return m.respond(data)
}

// Errors.
var (
	ErrClosed       = errors.New("pubsub: closed")
	ErrNoResponders = errors.New("pubsub: no responders")
	ErrNoReply      = errors.New("pubsub: message expects no reply")
)
