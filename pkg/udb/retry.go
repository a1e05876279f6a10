package udb

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Backoff defaults of FoundationDB's OnError.
const (
	InitialRetryDelay    = 10 * time.Millisecond
	DefaultMaxRetryDelay = time.Second
	tooOldOrFutureDelay  = time.Millisecond
	UnlimitedRetries     = -1
)

// RetryPolicy is the state of one transaction's OnError loop. Drivers embed it
// so every driver retries the same way; the zero value is not ready, use
// NewRetryPolicy.
type RetryPolicy struct {
	Limit    int           // retries allowed; UnlimitedRetries for no limit
	MaxDelay time.Duration // cap on one backoff
	retries  int
	next     time.Duration
}

// NewRetryPolicy returns FoundationDB's defaults: unlimited retries, backoff
// from 10 ms doubling to 1 s, each wait drawn uniformly below the backoff.
func NewRetryPolicy() RetryPolicy {
	return RetryPolicy{Limit: UnlimitedRetries, MaxDelay: DefaultMaxRetryDelay, next: InitialRetryDelay}
}

// Wait decides whether err is retried. If so it sleeps out the backoff (or
// until ctx ends) and returns nil; the caller then resets the transaction.
// Otherwise it returns err unchanged (or ctx's error).
func (p *RetryPolicy) Wait(ctx context.Context, err error) error {
	if !IsRetryable(err) {
		return err
	}
	if p.Limit != UnlimitedRetries && p.retries >= p.Limit {
		return err
	}
	p.retries++
	var d time.Duration
	switch codeOf(err) {
	case CodeTransactionTooOld, CodeFutureVersion:
		d = tooOldOrFutureDelay
	default:
		if p.next <= 0 {
			p.next = InitialRetryDelay
		}
		d = time.Duration(rand.Int64N(int64(min(p.next, p.MaxDelay)) + 1))
		p.next = min(2*p.next, p.MaxDelay)
	}
	if err := ctx.Err(); err != nil || d == 0 {
		return err
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Retries is how many retries the policy has allowed so far.
func (p *RetryPolicy) Retries() int { return p.retries }

// RunTransact is the retry loop behind Database.Transact: run f, commit, and on
// a udb error let OnError decide whether to go again. Other errors end the
// loop at once without committing.
func RunTransact(ctx context.Context, db Database, f func(Transaction) (any, error)) (any, error) {
	return retryLoop(ctx, db, func(tr Transaction) (any, error) {
		v, err := f(tr)
		if err == nil {
			err = tr.Commit(ctx)
		}
		return v, err
	})
}

// RunReadTransact is the retry loop behind Database.ReadTransact: like
// RunTransact but nothing is committed.
func RunReadTransact(ctx context.Context, db Database, f func(ReadTransaction) (any, error)) (any, error) {
	return retryLoop(ctx, db, func(tr Transaction) (any, error) { return f(tr) })
}

func retryLoop(ctx context.Context, db Database, attempt func(Transaction) (any, error)) (any, error) {
	tr, err := db.CreateTransaction()
	if err != nil {
		return nil, err
	}
	defer tr.Cancel()
	for {
		v, err := attempt(tr)
		if err == nil {
			return v, nil
		}
		var ue Error
		if !errors.As(err, &ue) {
			return nil, err
		}
		if err := tr.OnError(ctx, err); err != nil {
			return nil, err
		}
	}
}
