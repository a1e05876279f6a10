package udb_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
)

func TestOpenSchemes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		url, wantErr string
	}{
		{"mem://", ""},
		{"file://" + t.TempDir() + "/db", ""},
		{"postgres://localhost/berth", "PostgreSQL driver is not built"},
		{"fdb:///etc/foundationdb/fdb.cluster", "rebuild with -tags fdb"},
		{"redis://x", `unknown database scheme "redis"`},
		{"/just/a/path", "has no scheme"},
		{"mem://?bogus=1", `unknown option "bogus"`},
		{"mem://?max_watches=0", "max_watches"},
		{"mem://?sync=perhaps", "sync"},
		{"file://", "names no directory"},
	}
	for _, c := range cases {
		db, err := udb.Open(ctx, c.url)
		if c.wantErr == "" {
			if err != nil {
				t.Errorf("Open(%q): %v", c.url, err)
				continue
			}
			db.Close()
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.wantErr) {
			t.Errorf("Open(%q) = %v, want an error containing %q", c.url, err, c.wantErr)
		}
	}
}

func TestErrorPredicates(t *testing.T) {
	cases := []struct {
		code                      int
		retryable, maybeCommitted bool
	}{
		{udb.CodeNotCommitted, true, false},
		{udb.CodeCommitUnknownResult, true, true},
		{udb.CodeClusterVersionChanged, true, true},
		{udb.CodeTransactionTooOld, true, false},
		{udb.CodeFutureVersion, true, false},
		{udb.CodeTimedOut, false, false},
		{udb.CodeTransactionCancelled, false, false},
		{udb.CodeTransactionTimedOut, false, false},
		{udb.CodeKeyTooLarge, false, false},
	}
	for _, c := range cases {
		err := error(udb.Error{Code: c.code})
		wrapped := errors.Join(errors.New("context"), err)
		for _, e := range []error{err, wrapped} {
			if got := udb.IsRetryable(e); got != c.retryable {
				t.Errorf("IsRetryable(%d) = %v", c.code, got)
			}
			if got := udb.IsMaybeCommitted(e); got != c.maybeCommitted {
				t.Errorf("IsMaybeCommitted(%d) = %v", c.code, got)
			}
		}
	}
	if udb.IsRetryable(errors.New("plain")) {
		t.Error("a non-udb error is retryable")
	}
	if got := (udb.Error{Code: 1020}).Error(); !strings.Contains(got, "not_committed (1020)") {
		t.Errorf("message %q", got)
	}
}

func TestRetryPolicy(t *testing.T) {
	ctx := context.Background()
	p := udb.NewRetryPolicy()
	p.Limit, p.MaxDelay = 2, time.Millisecond
	conflict := udb.Error{Code: udb.CodeNotCommitted}
	for i := 0; i < 2; i++ {
		if err := p.Wait(ctx, conflict); err != nil {
			t.Fatalf("retry %d: %v", i, err)
		}
	}
	if err := p.Wait(ctx, conflict); err != conflict {
		t.Fatalf("past the limit: got %v, want the last error", err)
	}
	if got := p.Retries(); got != 2 {
		t.Fatalf("Retries = %d", got)
	}
	other := udb.Error{Code: udb.CodeKeyTooLarge}
	fresh := udb.NewRetryPolicy()
	if err := fresh.Wait(ctx, other); err != other {
		t.Fatalf("non-retryable: got %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	fresh = udb.NewRetryPolicy()
	if err := fresh.Wait(cancelled, conflict); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled ctx: got %v", err)
	}
}

func TestPrefixRange(t *testing.T) {
	cases := []struct{ prefix, end string }{
		{"a", "b"},
		{"a\xff", "b"},
		{"a\xfe", "a\xff"},
		{"\xff\xff", "\xff\xff"},
		{"", "\xff"},
	}
	for _, c := range cases {
		b, e := udb.PrefixRange([]byte(c.prefix))
		if string(b) != c.prefix || string(e) != c.end {
			t.Errorf("PrefixRange(%q) = %q, %q; want end %q", c.prefix, b, e, c.end)
		}
	}
}
