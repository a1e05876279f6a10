package runner

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	proto "github.com/berthhq/berth/sdk/protocol/runner"
)

// KV is an actor's key-value store in the engine (docs/protocol.md, "KV"): byte keys in byte
// order, each call one ToServerKvRequest answered by one ToClientKvResponse. The engine
// enforces the limits (key 2 KiB, value 128 KiB, 128 keys and 976 KiB per request, 10 GiB per
// actor) and answers a breach with a *KVError naming it.
//
// Requests made while the runner is disconnected are queued and sent after the next
// ToClientInit; so are requests sent but not answered when the socket dropped (every
// request is idempotent, and the engine answers a socket's requests in order, so sending
// them again in order is safe; the reference client sends only the unsent ones and lets the
// others time out). A request without answer after Config.KVTimeout (30 s) from the call
// fails with ErrKVTimeout; all fail when the runner is lost or stops.
type KV struct {
	in *instance
}

// Entry is one key and its value, with the engine's metadata when read.
type Entry struct {
	Key, Value []byte
	Version    []byte    // the engine's version when the value was written
	UpdatedAt  time.Time // when the value was written
}

// ListOptions selects the keys of a List: every key, those with Prefix, or those from Start
// to End (End included unless Exclusive). Prefix and a range cannot be combined.
type ListOptions struct {
	Prefix     []byte
	Start, End []byte // a range when either is non-nil
	Exclusive  bool   // leave End out of the range
	Reverse    bool   // from the last key down
	Limit      int    // at most this many entries; 0 for all
}

// KVError is the engine's KvErrorResponse: the request was refused (a limit, or an actor this
// runner does not host) and changed nothing.
type KVError struct{ Message string }

func (e *KVError) Error() string { return "runner: kv: " + e.Message }

// ErrKVTimeout is returned for a request without answer after Config.KVTimeout.
var ErrKVTimeout = errors.New("runner: kv: no answer in time")

// Get returns the value of key, and whether it exists.
func (kv *KV) Get(ctx context.Context, key []byte) ([]byte, bool, error) {
	es, err := kv.GetMany(ctx, [][]byte{key})
	if err != nil || len(es) == 0 {
		return nil, false, err
	}
	return es[0].Value, true, nil
}

// GetMany returns the entries of the keys that exist, in the order asked.
func (kv *KV) GetMany(ctx context.Context, keys [][]byte) ([]Entry, error) {
	res, err := kv.do(ctx, proto.KvGetRequest{Keys: keys})
	if err != nil {
		return nil, err
	}
	r, ok := res.(proto.KvGetResponse)
	if !ok {
		return nil, unexpected("get", res)
	}
	found, err := entries(r.Keys, r.Values, r.Metadata)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(found))
	for _, k := range keys {
		i := slices.IndexFunc(found, func(e Entry) bool { return bytes.Equal(e.Key, k) })
		if i >= 0 && !slices.ContainsFunc(out, func(e Entry) bool { return bytes.Equal(e.Key, k) }) {
			out = append(out, found[i])
		}
	}
	return out, nil
}

// List returns the entries o selects, in key order (reversed with o.Reverse).
func (kv *KV) List(ctx context.Context, o ListOptions) ([]Entry, error) {
	var q proto.KvListQuery = proto.KvListAllQuery{}
	switch rng := o.Start != nil || o.End != nil; {
	case rng && o.Prefix != nil:
		return nil, errors.New("runner: kv: list: Prefix and Start/End cannot be combined")
	case rng:
		q = proto.KvListRangeQuery{Start: nonNil(o.Start), End: nonNil(o.End), Exclusive: o.Exclusive}
	case o.Prefix != nil:
		q = proto.KvListPrefixQuery{Key: o.Prefix}
	}
	req := proto.KvListRequest{Query: q}
	if o.Reverse {
		req.Reverse = &o.Reverse
	}
	switch {
	case o.Limit < 0:
		return nil, fmt.Errorf("runner: kv: list: negative Limit %d", o.Limit)
	case o.Limit > 0:
		l := uint64(o.Limit)
		req.Limit = &l
	}
	res, err := kv.do(ctx, req)
	if err != nil {
		return nil, err
	}
	r, ok := res.(proto.KvListResponse)
	if !ok {
		return nil, unexpected("list", res)
	}
	return entries(r.Keys, r.Values, r.Metadata)
}

// Put writes one value.
func (kv *KV) Put(ctx context.Context, key, value []byte) error {
	return kv.PutMany(ctx, []Entry{{Key: key, Value: value}})
}

// PutMany writes the entries' values in one request: all or none. For a key given twice the
// later value wins.
func (kv *KV) PutMany(ctx context.Context, es []Entry) error {
	req := proto.KvPutRequest{Keys: make([][]byte, len(es)), Values: make([][]byte, len(es))}
	for i, e := range es {
		req.Keys[i], req.Values[i] = nonNil(e.Key), nonNil(e.Value)
	}
	return kv.expect(ctx, "put", req, proto.KvPutResponse{})
}

// Delete removes the keys; missing keys are no error.
func (kv *KV) Delete(ctx context.Context, keys ...[]byte) error {
	return kv.expect(ctx, "delete", proto.KvDeleteRequest{Keys: keys}, proto.KvDeleteResponse{})
}

// DeleteRange removes the keys from start (included) to end (excluded). It needs protocol v7.
func (kv *KV) DeleteRange(ctx context.Context, start, end []byte) error {
	if v := kv.in.h.r.cfg.ProtocolVersion; v < proto.Version7 {
		return fmt.Errorf("runner: kv: DeleteRange needs protocol v7, the runner speaks v%d", v)
	}
	return kv.expect(ctx, "delete range", proto.KvDeleteRangeRequest{Start: nonNil(start), End: nonNil(end)}, proto.KvDeleteResponse{})
}

// Drop removes every key of the actor.
func (kv *KV) Drop(ctx context.Context) error {
	return kv.expect(ctx, "drop", proto.KvDropRequest{}, proto.KvDropResponse{})
}

func (kv *KV) expect(ctx context.Context, op string, req proto.KvRequestData, want proto.KvResponseData) error {
	res, err := kv.do(ctx, req)
	if err != nil {
		return err
	}
	if res != want {
		return unexpected(op, res)
	}
	return nil
}

// do sends one request for the actor and waits for its answer.
func (kv *KV) do(ctx context.Context, data proto.KvRequestData) (proto.KvResponseData, error) {
	if !kv.in.kvAllowed() {
		return nil, ErrActorStopped
	}
	res, err := kv.in.h.r.kvRequest(ctx, kv.in.id, data)
	if err != nil {
		return nil, err
	}
	if e, ok := res.(proto.KvErrorResponse); ok {
		return nil, &KVError{Message: e.Message}
	}
	return res, nil
}

func entries(keys, values [][]byte, md []proto.KvMetadata) ([]Entry, error) {
	if len(keys) != len(values) || len(keys) != len(md) {
		return nil, &ProtocolError{fmt.Sprintf("kv response with %d keys, %d values and %d metadata", len(keys), len(values), len(md))}
	}
	out := make([]Entry, len(keys))
	for i := range keys {
		out[i] = Entry{Key: keys[i], Value: values[i], Version: md[i].Version, UpdatedAt: time.UnixMilli(md[i].UpdateTs)}
	}
	return out, nil
}

func unexpected(op string, res proto.KvResponseData) error {
	return &ProtocolError{fmt.Sprintf("kv %s answered with %T", op, res)}
}

// nonNil keeps a nil key a present, empty value on the wire.
func nonNil(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

// kvState is the runner's KV requests in flight, guarded by Runner.mu.
type kvState struct {
	nextID uint32             // the next request id: counts from 0 per runner, never reset
	seq    uint64             // requests issued
	calls  map[uint32]*kvCall // requests without answer
}

type kvCall struct {
	seq uint64 // issue order, for sending again after a reconnect (ids wrap)
	req proto.ToServerKvRequest
	res chan kvResult // capacity 1
}

type kvResult struct {
	data proto.KvResponseData
	err  error
}

// kvRequest sends a request (or queues it while disconnected) and waits for the answer, ctx,
// or Config.KVTimeout.
func (r *Runner) kvRequest(ctx context.Context, actorID string, data proto.KvRequestData) (proto.KvResponseData, error) {
	call := &kvCall{res: make(chan kvResult, 1)}
	r.mu.Lock()
	if r.mu.stopped {
		r.mu.Unlock()
		return nil, ErrStopped
	}
	if r.mu.kv.calls == nil {
		r.mu.kv.calls = map[uint32]*kvCall{}
	}
	id := r.mu.kv.nextID
	for r.mu.kv.calls[id] != nil { // a wrapped id still in flight
		id++
	}
	r.mu.kv.nextID = id + 1
	r.mu.kv.seq++
	call.seq = r.mu.kv.seq
	call.req = proto.ToServerKvRequest{ActorID: actorID, RequestID: id, Data: data}
	r.mu.kv.calls[id] = call
	if r.mu.conn != nil {
		r.mu.conn.send(call.req)
	}
	r.mu.Unlock()

	t := time.NewTimer(r.cfg.KVTimeout)
	defer t.Stop()
	select {
	case res := <-call.res:
		return res.data, res.err
	case <-ctx.Done():
		r.forgetKV(id, call)
		return nil, fmt.Errorf("runner: kv: %w", ctx.Err())
	case <-t.C:
		r.forgetKV(id, call)
		return nil, fmt.Errorf("%w (%s)", ErrKVTimeout, r.cfg.KVTimeout)
	}
}

func (r *Runner) forgetKV(id uint32, call *kvCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.kv.calls[id] == call {
		delete(r.mu.kv.calls, id)
	}
}

// kvResponse hands the engine's answer to its request.
func (r *Runner) kvResponse(m proto.ToClientKvResponse) {
	r.mu.Lock()
	call := r.mu.kv.calls[m.RequestID]
	delete(r.mu.kv.calls, m.RequestID)
	r.mu.Unlock()
	if call == nil {
		r.log.Debug("runner: kv response for no request in flight", "request_id", m.RequestID)
		return
	}
	call.res <- kvResult{data: m.Data}
}

// failKV fails every request in flight with err.
func (r *Runner) failKV(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failKVLocked(err)
}

func (r *Runner) failKVLocked(err error) {
	for id, call := range r.mu.kv.calls {
		call.res <- kvResult{err: err}
		delete(r.mu.kv.calls, id)
	}
}

// resendKVLocked sends every request without answer on c, in issue order.
func (r *Runner) resendKVLocked(c *conn) int {
	calls := make([]*kvCall, 0, len(r.mu.kv.calls))
	for _, call := range r.mu.kv.calls {
		calls = append(calls, call)
	}
	slices.SortFunc(calls, func(a, b *kvCall) int { return cmp.Compare(a.seq, b.seq) })
	for _, call := range calls {
		c.send(call.req)
	}
	return len(calls)
}
