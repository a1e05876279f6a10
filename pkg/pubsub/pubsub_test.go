package pubsub

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// bus returns two connections to one bus, as two engine nodes would have.
type bus func(t *testing.T) (PubSub, PubSub)

func memoryBus(t *testing.T) (PubSub, PubSub) {
	m := NewMemory()
	t.Cleanup(func() { _ = m.Close() })
	return m, m
}

func natsBus(t *testing.T) (PubSub, PubSub) {
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	dial := func() PubSub {
		n, err := DialNATS(ns.ClientURL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		return n
	}
	return dial(), dial()
}

func TestMemory(t *testing.T) { suite(t, memoryBus) }
func TestNATS(t *testing.T)   { suite(t, natsBus) }

func suite(t *testing.T, newBus bus) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	next := func(t *testing.T, s Subscription) Message {
		t.Helper()
		m, err := s.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	t.Run("broadcast in order", func(t *testing.T) {
		a, b := newBus(t)
		s1, _ := a.Subscribe(ctx, "x.y")
		s2, _ := b.Subscribe(ctx, "x.y")
		other, _ := b.Subscribe(ctx, "x.z")
		for i := range 10 {
			if err := a.Publish(ctx, "x.y", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range []Subscription{s1, s2} {
			for i := range 10 {
				if m := next(t, s); string(m.Data) != fmt.Sprint(i) || m.Subject != "x.y" {
					t.Fatalf("message %d = %q on %s", i, m.Data, m.Subject)
				}
			}
		}
		short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancelShort()
		if _, err := other.Next(short); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("a subscriber of another subject got %v", err)
		}
	})
	t.Run("queue group", func(t *testing.T) {
		a, b := newBus(t)
		m1, _ := a.QueueSubscribe(ctx, "work", "g")
		m2, _ := b.QueueSubscribe(ctx, "work", "g")
		const n = 200
		for i := range n {
			if err := a.Publish(ctx, "work", []byte(fmt.Sprint(i))); err != nil {
				t.Fatal(err)
			}
		}
		got := map[string]int{}
		counts := [2]int{}
		for len(got) < n {
			select {
			case <-ctx.Done():
				t.Fatalf("got %d of %d messages", len(got), n)
			default:
			}
			for i, s := range []Subscription{m1, m2} {
				short, c := context.WithTimeout(ctx, 20*time.Millisecond)
				m, err := s.Next(short)
				c()
				if err == nil {
					got[string(m.Data)]++
					counts[i]++
				}
			}
		}
		for d, c := range got {
			if c != 1 {
				t.Fatalf("message %s delivered %d times", d, c)
			}
		}
		if counts[0] == 0 || counts[1] == 0 {
			t.Fatalf("one member got everything: %v", counts)
		}
	})
	t.Run("request reply", func(t *testing.T) {
		a, b := newBus(t)
		if _, err := a.Request(ctx, "nobody", []byte("?")); !errors.Is(err, ErrNoResponders) {
			t.Fatalf("request with no responder: %v", err)
		}
		srv, _ := b.QueueSubscribe(ctx, "echo", "servers")
		go func() {
			for {
				m, err := srv.Next(ctx)
				if err != nil {
					return
				}
				_ = m.Respond(append([]byte("re:"), m.Data...))
			}
		}()
		got, err := a.Request(ctx, "echo", []byte("hi"))
		if err != nil || string(got) != "re:hi" {
			t.Fatalf("request = %q, %v", got, err)
		}
		plain, _ := b.Subscribe(ctx, "plain")
		_ = a.Publish(ctx, "plain", nil)
		if err := next(t, plain).Respond([]byte("x")); !errors.Is(err, ErrNoReply) {
			t.Fatalf("Respond to a publish: %v", err)
		}
	})
	t.Run("unsubscribe and close", func(t *testing.T) {
		a, b := newBus(t)
		s, _ := b.Subscribe(ctx, "u")
		if err := s.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Next(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next after Unsubscribe: %v", err)
		}
		live, _ := b.Subscribe(ctx, "u")
		_ = a.Publish(ctx, "u", []byte("1"))
		if m := next(t, live); string(m.Data) != "1" {
			t.Fatalf("got %q", m.Data)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := live.Next(ctx); !errors.Is(err, ErrClosed) {
			t.Fatalf("Next after Close: %v", err)
		}
	})
}
