package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/berthhq/berth/sdk/client"
	"github.com/berthhq/berth/sdk/client/clienttest"
)

// Over HTTP: a 503 in the middle of a list ends it with a retryable *APIError, after the
// items already fetched.
func TestRunnersAllError(t *testing.T) {
	f := clienttest.NewEngine(token, 30)
	f.FailAfter = 2
	c := newClient(t, f)
	got, err := client.Collect(c.Runners().All(context.Background(), client.RunnerListOptions{Limit: 5, IncludeStopped: true}))
	var apiErr *client.APIError
	if len(got) != 10 || !errors.As(err, &apiErr) || !apiErr.Retryable() {
		t.Errorf("got %d runners, %v", len(got), err)
	}
}

func TestRunnersAllStuckCursor(t *testing.T) {
	f := clienttest.NewEngine(token, 30)
	f.StuckCursor = true
	c := newClient(t, f)
	got, err := client.Collect(c.Runners().All(context.Background(), client.RunnerListOptions{Limit: 5, IncludeStopped: true}))
	// The second page comes back with the cursor it was asked for: its items are not yielded.
	if len(got) != 5 || err == nil {
		t.Errorf("got %d runners, %v; want 5 and an error", len(got), err)
	}
}
