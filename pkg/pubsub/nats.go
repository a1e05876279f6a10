package pubsub

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// NATS is the driver for several engine nodes: a connection to a NATS server.
type NATS struct {
	nc *nats.Conn
}

// DialNATS connects to the NATS server at url ("nats://host:4222"), reconnecting by
// itself for as long as the process runs.
func DialNATS(url string, opts ...nats.Option) (*NATS, error) {
	opts = append([]nats.Option{nats.Name("berth"), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("pubsub: connect to NATS at %s: %w", url, err)
	}
	return &NATS{nc: nc}, nil
}

func (n *NATS) Publish(ctx context.Context, subject string, data []byte) error {
	return natsErr(n.nc.Publish(subject, data))
}

func (n *NATS) Subscribe(ctx context.Context, subject string) (Subscription, error) {
	s, err := n.nc.SubscribeSync(subject)
	if err != nil {
		return nil, natsErr(err)
	}
	return n.ready(s)
}

func (n *NATS) QueueSubscribe(ctx context.Context, subject, group string) (Subscription, error) {
	s, err := n.nc.QueueSubscribeSync(subject, group)
	if err != nil {
		return nil, natsErr(err)
	}
	return n.ready(s)
}

func (n *NATS) Request(ctx context.Context, subject string, data []byte) ([]byte, error) {
	msg, err := n.nc.RequestWithContext(ctx, subject, data)
	if err != nil {
		return nil, natsErr(err)
	}
	return msg.Data, nil
}

func (n *NATS) Close() error {
	n.nc.Close()
	return nil
}

// ready waits until the server has the subscription, so that a publish made after
// Subscribe returns, from any connection, reaches it.
func (n *NATS) ready(s *nats.Subscription) (Subscription, error) {
	if err := n.nc.Flush(); err != nil {
		_ = s.Unsubscribe()
		return nil, natsErr(err)
	}
	return &natsSub{s: s}, nil
}

type natsSub struct {
	s *nats.Subscription
}

func (s *natsSub) Next(ctx context.Context) (Message, error) {
	m, err := s.s.NextMsgWithContext(ctx)
	if err != nil {
		return Message{}, natsErr(err)
	}
	msg := Message{Subject: m.Subject, Data: m.Data}
	if m.Reply != "" {
		msg.respond = m.Respond
	}
	return msg, nil
}

func (s *natsSub) Unsubscribe() error {
	err := s.s.Unsubscribe()
	if errors.Is(err, nats.ErrConnectionClosed) || errors.Is(err, nats.ErrBadSubscription) {
		return nil
	}
	return natsErr(err)
}

// natsErr maps the NATS client's errors onto this package's.
func natsErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, nats.ErrNoResponders):
		return ErrNoResponders
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrBadSubscription):
		return ErrClosed
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("pubsub: %w", err)
}
