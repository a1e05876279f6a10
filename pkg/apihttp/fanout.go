package apihttp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// FanOutParallelism is how many datacenters FanOut calls at once (Rivet's fanout_to_datacenters).
const FanOutParallelism = 16

// DatacenterResult is one datacenter's answer in a fan-out: Value if Err is nil.
type DatacenterResult[T any] struct {
	Datacenter Datacenter
	Value      T
	Err        error
}

// FanOut calls fn once for every datacenter in dcs, at most FanOutParallelism at a time, each
// with a context that ends after timeout, and returns the results in the order of dcs. It
// returns when every call has returned: fn must give up when its context ends (PeerClient
// does), which bounds FanOut by about timeout per round of FanOutParallelism calls.
//
// An fn that fails because its time ran out gets datacenter.unreachable naming the datacenter
// (unless it already returned a rerr error); one that panics gets core.internal_error. A
// datacenter not yet called when ctx ends gets ctx's error.
func FanOut[T any](ctx context.Context, dcs []Datacenter, timeout time.Duration,
	fn func(ctx context.Context, dc Datacenter) (T, error)) []DatacenterResult[T] {
	results := make([]DatacenterResult[T], len(dcs))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(FanOutParallelism, len(dcs)) {
		wg.Go(func() {
			for i := range next {
				results[i] = callOne(ctx, dcs[i], timeout, fn)
			}
		})
	}
	for i := range dcs {
		next <- i
	}
	close(next)
	wg.Wait()
	return results
}

func callOne[T any](ctx context.Context, dc Datacenter, timeout time.Duration,
	fn func(ctx context.Context, dc Datacenter) (T, error)) (r DatacenterResult[T]) {
	r.Datacenter = dc
	if err := ctx.Err(); err != nil {
		r.Err = fmt.Errorf("datacenter %s not called: %w", dc.Name, err)
		return r
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.Err = rerr.Internal(fmt.Errorf("fan-out to datacenter %s panicked: %v", dc.Name, p))
		}
	}()
	r.Value, r.Err = fn(dctx, dc)
	if r.Err != nil && dctx.Err() != nil && ctx.Err() == nil {
		if _, ok := rerr.As(r.Err); !ok {
			r.Err = rerr.DatacenterUnreachable(dc.Name, fmt.Errorf("no answer within %s: %w", timeout, r.Err))
		}
	}
	return r
}

// Succeeded returns the results that succeeded, after logging each failure (Warn, with the
// request's ray id). It fails only when every datacenter failed (Rivet's rule for fan-out
// reads): then it returns the first 4xx error (the request itself is wrong, e.g.
// namespace.not_found, and every datacenter says so), or else the first error. No datacenters
// at all is not a failure.
func Succeeded[T any](ctx context.Context, results []DatacenterResult[T]) ([]DatacenterResult[T], error) {
	ok := make([]DatacenterResult[T], 0, len(results))
	var first, firstClient error
	for _, r := range results {
		if r.Err == nil {
			ok = append(ok, r)
			continue
		}
		Logger(ctx).LogAttrs(ctx, slog.LevelWarn, "datacenter failed in fan-out",
			slog.String("datacenter", r.Datacenter.Name), slog.String("error", r.Err.Error()))
		if first == nil {
			first = r.Err
		}
		if firstClient == nil && rerr.HTTPStatus(r.Err) < 500 {
			firstClient = r.Err
		}
	}
	if len(ok) == 0 && first != nil {
		if firstClient != nil {
			return nil, firstClient
		}
		return nil, first
	}
	return ok, nil
}

// FirstError returns the first failure in dcs order, or nil: for fan-out writes, which must
// succeed everywhere.
func FirstError[T any](results []DatacenterResult[T]) error {
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}
