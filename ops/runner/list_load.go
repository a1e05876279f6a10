package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/corrupt"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/udb"
)

// The API's reads of runners (ListForNs, Get) read each runner with one range read over its
// data keys, keys.RunnerFieldsRange, and tell the fields apart by their tag
// (keys.ParseRunnerDataKey): no key is packed or unpacked per field. A listing is dominated
// by the cost of starting a range read (a seek in every level of the store), so one read per
// runner instead of one per field, or two around the actor command subspace, is what makes
// a page of 100 runners cheap.
//
// The actor command subspace (RUNNER, DATA, runner_id, ACTOR, …) sits between the fields and
// may be large, so the read is cut at recordRowLimit rows: a runner without commands has
// fewer rows than that (its fields, and its metadata in a few 10,000-byte chunks), and one
// read is enough. When the limit is reached, a second read fetches the rest from the first
// field after the actor subspace (or after the last row, if that is further), so at most
// recordRowLimit rows of the subspace are read for nothing; its first rows are the small
// LAST_COMMAND_IDX values, which sort before the commands.

// recordRowLimit bounds the first range read of a runner's data keys: its 16 fields and
// up to 16 metadata chunks (160 kB) fit.
const recordRowLimit = 32

// runnerRead is the read of one runner for the API, started by startRecord.
type runnerRead struct {
	rid    id.ID
	prefix []byte // of every data key
	end    []byte // of every read
	it     udb.RangeIterator
}

// start starts the record's first read, from begin, through r.
func (rec *runnerRead) start(r udb.ReadTransaction, begin []byte) {
	rec.it = r.GetRange(udb.FirstGreaterOrEqual(begin), udb.FirstGreaterOrEqual(rec.end),
		udb.RangeOptions{Limit: recordRowLimit, Mode: udb.StreamingModeWantAll})
}

// startRecord starts reading runner rid through r, which the caller passes as a snapshot,
// so that a list can start the reads of a whole page before it waits for any (a driver that
// fetches ahead, FoundationDB, then runs them in parallel).
func startRecord(r udb.ReadTransaction, rid id.ID) runnerRead {
	prefix, begin, end := keys.RunnerFieldsRange(rid)
	rec := runnerRead{rid: rid, prefix: prefix, end: end}
	rec.start(r, begin)
	return rec
}

// startRecords starts reading runners rids through r, a snapshot, after fetching all of
// their records' first rows together (udb Prefetch: one round trip on PostgreSQL, where a
// page of 100 runners read one by one took 100).
func startRecords(ctx context.Context, r udb.ReadTransaction, rids []id.ID) []runnerRead {
	recs := make([]runnerRead, len(rids))
	ranges := make([]udb.KeyRange, len(rids))
	for i, rid := range rids {
		prefix, begin, end := keys.RunnerFieldsRange(rid)
		recs[i] = runnerRead{rid: rid, prefix: prefix, end: end}
		ranges[i] = udb.KeyRange{Begin: begin, End: end}
	}
	r.Prefetch(ctx, nil, ranges)
	for i := range recs {
		recs[i].start(r, ranges[i].Begin)
	}
	return recs
}

// finish waits for the record's rows and decodes them: the runner, or found false when it
// does not exist. A runner is registered in one transaction, so one read version sees all
// of its fields or none. Stored bytes that do not decode, and a missing required field,
// are store.corrupt. sc is shared by the runners of one list.
func (rec runnerRead) finish(ctx context.Context, r udb.ReadTransaction, datacenter string, sc *scratch) (Runner, bool, error) {
	rows, err := rec.rows(ctx, r, sc.rows[:0])
	sc.rows = rows
	defer clear(rows) // drop the references to this runner's rows
	if err != nil {
		return Runner{}, false, err
	}
	run, found, err := decodeRecord(rec.rid, rec.prefix, rows, sc)
	if found {
		run.Datacenter = datacenter
	}
	return run, found, err
}

// scratch is what the runners of one list share while they are decoded, to allocate less
// per runner.
type scratch struct {
	rows []udb.KeyValue // one runner's rows, reused from one runner to the next
	name string         // the last runner name: a page's runners share a few names
	ts   []int64        // backing for the optional timestamps the runners point to
}

// int64 returns a pointer to a new int64 holding v.
func (sc *scratch) int64(v int64) *int64 {
	if len(sc.ts) == cap(sc.ts) {
		sc.ts = make([]int64, 0, 64)
	}
	sc.ts = append(sc.ts, v)
	return &sc.ts[len(sc.ts)-1]
}

// rows appends the rows of the record to buf.
func (rec runnerRead) rows(ctx context.Context, r udb.ReadTransaction, buf []udb.KeyValue) ([]udb.KeyValue, error) {
	for rec.it.Next(ctx) {
		buf = append(buf, rec.it.KeyValue())
	}
	if err := rec.it.Err(); err != nil {
		return buf, err
	}
	if len(buf) == recordRowLimit {
		from := keys.RunnerFieldsAfterActors(rec.rid)
		if last := udb.KeyAfter(buf[len(buf)-1].Key); bytes.Compare(last, from) > 0 {
			from = last
		}
		more, err := r.GetRange(udb.FirstGreaterOrEqual(from), udb.FirstGreaterOrEqual(rec.end),
			udb.RangeOptions{Mode: udb.StreamingModeWantAll}).All(ctx)
		if err != nil {
			return buf, err
		}
		buf = append(buf, more...)
	}
	return buf, nil
}

// fields holds the raw value of each field a runner object shows; nil when absent.
type fields struct {
	createTs, namespaceID, name, key, version, totalSlots, remainingSlots []byte
	drainTs, stopTs, connectedTs, lastPingTs, lastRtt                     []byte
	metadata                                                              []byte // the chunks, concatenated
	hasMetadata                                                           bool
}

// decodeRecord builds runner rid from the rows of its data keys, in key order; prefix is
// the keys' common prefix (keys.RunnerFieldsRange). It reports the same errors, in the same
// order of fields, as a read of one key per field would. The runner keeps no reference to
// rows, only to row values. Datacenter is left for the caller.
func decodeRecord(rid id.ID, prefix []byte, rows []udb.KeyValue, sc *scratch) (Runner, bool, error) {
	if len(rows) == 0 {
		return Runner{}, false, nil
	}
	var f fields
	chunks := 0
	for _, kv := range rows {
		field, chunk, ok := keys.ParseRunnerDataKey(prefix, kv.Key)
		switch {
		case !ok:
			continue
		case chunk != keys.NotChunk && field != keys.RunnerFieldMetadata:
			continue // below a field, not the field: the actor command subspace
		}
		v := kv.Value
		switch field {
		case keys.RunnerFieldCreateTs:
			f.createTs = v
		case keys.RunnerFieldNamespaceID:
			f.namespaceID = v
		case keys.RunnerFieldName:
			f.name = v
		case keys.RunnerFieldKey:
			f.key = v
		case keys.RunnerFieldVersion:
			f.version = v
		case keys.RunnerFieldTotalSlots:
			f.totalSlots = v
		case keys.RunnerFieldRemainingSlots:
			f.remainingSlots = v
		case keys.RunnerFieldDrainTs:
			f.drainTs = v
		case keys.RunnerFieldStopTs:
			f.stopTs = v
		case keys.RunnerFieldConnectedTs:
			f.connectedTs = v
		case keys.RunnerFieldLastPingTs:
			f.lastPingTs = v
		case keys.RunnerFieldLastRtt:
			f.lastRtt = v
		case keys.RunnerFieldMetadata:
			if chunk == keys.NotChunk {
				continue // the base key is not a chunk
			}
			// Chunks 0, 1, 2, ... as keys.SetChunked writes them.
			if chunk != chunks {
				base := keys.RunnerMetadataKey{RunnerID: rid}
				return Runner{}, false, corrupt.Mark("runner", fmt.Errorf("%w: %T %x: row %d has key %x, want chunk %d",
					keys.ErrBadValue, base, base.Pack(), chunks, kv.Key, chunks))
			}
			if chunks == 0 {
				f.metadata = v // rows are ours: the common single chunk is not copied
			} else {
				f.metadata = append(f.metadata[:len(f.metadata):len(f.metadata)], v...)
			}
			f.hasMetadata = true
			chunks++
		}
	}
	if f.createTs == nil {
		return Runner{}, false, nil
	}
	d := fieldDecoder{rid: rid, sc: sc}
	createTs, _ := opt(&d, f.createTs, keys.RunnerCreateTsKey{})
	out := Runner{
		RunnerID:       rid,
		NamespaceID:    must(&d, f.namespaceID, keys.RunnerNamespaceIDKey{}, "namespace_id"),
		Name:           d.name(f.name),
		Key:            must(&d, f.key, keys.RunnerKeyKey{}, "key"),
		Version:        must(&d, f.version, keys.RunnerVersionKey{}, "version"),
		TotalSlots:     must(&d, f.totalSlots, keys.RunnerTotalSlotsKey{}, "total_slots"),
		RemainingSlots: must(&d, f.remainingSlots, keys.RunnerRemainingSlotsKey{}, "remaining_slots"),
		CreateTs:       createTs,
		DrainTs:        ptr(&d, f.drainTs, keys.RunnerDrainTsKey{}),
		StopTs:         ptr(&d, f.stopTs, keys.RunnerStopTsKey{}),
	}
	out.LastConnectedTs = ptr(&d, f.connectedTs, keys.RunnerConnectedTsKey{})
	// A missing ping or RTT reads as 0, as in Rivet.
	out.LastPingTs, _ = opt(&d, f.lastPingTs, keys.RunnerLastPingTsKey{})
	out.LastRtt, _ = opt(&d, f.lastRtt, keys.RunnerLastRttKey{})
	if f.hasMetadata {
		if md, ok := opt(&d, f.metadata, keys.RunnerMetadataKey{}); ok {
			out.Metadata = json.RawMessage(md)
		}
	}
	if err := d.err(); err != nil {
		return Runner{}, false, err
	}
	return out, true, nil
}

// fieldDecoder decodes field values; after the first error the others are skipped.
type fieldDecoder struct {
	rid     id.ID
	sc      *scratch
	failed  error
	missing string // the first required field found absent
}

// opt decodes v, absent when nil.
func opt[V any](d *fieldDecoder, v []byte, k keys.Key[V]) (V, bool) {
	var zero V
	if d.failed != nil || v == nil {
		return zero, false
	}
	out, err := k.Decode(v)
	if err != nil {
		d.failed = fmt.Errorf("%w (runner %s)", err, d.rid)
		return zero, false
	}
	return out, true
}

// must decodes v, a field every runner has.
func must[V any](d *fieldDecoder, v []byte, k keys.Key[V], field string) V {
	out, found := opt(d, v, k)
	if d.failed == nil && !found && d.missing == "" {
		d.missing = field
	}
	return out
}

// ptr decodes an optional timestamp, nil when absent.
func ptr(d *fieldDecoder, v []byte, k keys.Key[int64]) *int64 {
	out, found := opt(d, v, k)
	if !found {
		return nil
	}
	return d.sc.int64(out)
}

// name decodes the runner name, which every runner has, as must does, sharing the string
// of the previous runner's name when it is the same.
func (d *fieldDecoder) name(v []byte) string {
	if d.failed == nil && v != nil && string(v) == d.sc.name {
		return d.sc.name // the same bytes: valid UTF-8 already
	}
	name := must(d, v, keys.RunnerDataNameKey{}, "name")
	if d.failed == nil && v != nil {
		d.sc.name = name
	}
	return name
}

func (d *fieldDecoder) err() error {
	switch {
	case d.failed != nil:
		return corrupt.Mark("runner", d.failed)
	case d.missing != "":
		return rerr.Corrupt("runner", "the record has no %s", d.missing)
	}
	return nil
}
