package wsconn

import (
	"context"
	"errors"
	"testing"
	"time"
)

var errClosed = errors.New("closed")

// Messages come out in order, those delivered before Close included; then the closed error.
func TestInboxOrderAndClose(t *testing.T) {
	closes := 0
	b := NewInbox[int](8, func() { closes++ })
	ctx := context.Background()
	for round := range 3 { // the queue's array is reused once drained
		for i := range 5 {
			b.Deliver(round*10 + i)
		}
		for i := range 5 {
			if m, err := b.Recv(ctx, errClosed); err != nil || m != round*10+i {
				t.Fatalf("round %d: Recv = %d, %v; want %d", round, m, err, round*10+i)
			}
		}
	}
	b.Deliver(1)
	b.Deliver(2)
	b.Close()
	b.Close()
	b.Deliver(3) // dropped
	for _, want := range []int{1, 2} {
		if m, err := b.Recv(ctx, errClosed); err != nil || m != want {
			t.Fatalf("after Close: Recv = %d, %v; want %d", m, err, want)
		}
	}
	if _, err := b.Recv(ctx, errClosed); err != errClosed {
		t.Fatalf("drained and closed: Recv error %v, want the closed error", err)
	}
	if closes != 1 {
		t.Errorf("onClose ran %d times", closes)
	}
}

// A reader that falls the whole bound behind loses the inbox.
func TestInboxOverflowCloses(t *testing.T) {
	b := NewInbox[int](4, nil)
	for i := range 5 {
		b.Deliver(i)
	}
	select {
	case <-b.Done():
	default:
		t.Fatal("the fifth message over a bound of 4 did not close the inbox")
	}
}

// Recv waits for a delivery, and gives up with its context.
func TestInboxRecvWaits(t *testing.T) {
	b := NewInbox[string](4, nil)
	got := make(chan string)
	go func() {
		m, _ := b.Recv(context.Background(), errClosed)
		got <- m
	}()
	b.Deliver("hello")
	if m := <-got; m != "hello" {
		t.Fatalf("Recv = %q", m)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := b.Recv(ctx, errClosed); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv with nothing delivered = %v, want the context's error", err)
	}
}
