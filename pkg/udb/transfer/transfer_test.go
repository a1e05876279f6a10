package transfer

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
	_ "github.com/berthhq/berth/pkg/udb/driver/embedded"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// open opens a store by URL and closes it when t ends.
func open(t testing.TB, url string) udb.Database {
	t.Helper()
	db, err := udb.Open(context.Background(), url)
	if err != nil {
		t.Fatalf("udb.Open(%q): %v", url, err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("closing %q: %v", url, err)
		}
	})
	return db
}

// smallChunks makes export chunks and import transactions small, so a test
// of a few hundred kilobytes crosses many of both.
func smallChunks(t *testing.T) {
	e, i := exportChunkBytes, importTxnBytes
	exportChunkBytes, importTxnBytes = 16<<10, 24<<10
	t.Cleanup(func() { exportChunkBytes, importTxnBytes = e, i })
}

// fixture is a key space that exercises the format's edge cases: the empty
// key, an empty value, zero bytes in keys, keys and values at FoundationDB's
// size limits, a key just below \xff, and enough rows for many chunks.
func fixture() []udb.KeyValue {
	r := rand.New(rand.NewPCG(1, 2))
	kvs := []udb.KeyValue{
		{Key: []byte{}, Value: []byte("the empty key")},
		{Key: []byte{0}, Value: []byte{}},
		{Key: []byte{0, 0, 1}, Value: []byte{0, 0xff, 0}},
		{Key: bytes.Repeat([]byte{'k'}, udb.MaxKeySize), Value: bytes.Repeat([]byte{'v'}, udb.MaxValueSize)},
		{Key: []byte{0xfe, 0xff, 0xff}, Value: []byte("last")},
	}
	for i := range 600 {
		v := make([]byte, r.IntN(2000))
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		kvs = append(kvs, udb.KeyValue{Key: fmt.Appendf(nil, "row/%05d", i), Value: v})
	}
	return kvs
}

func load(t testing.TB, db udb.Database, kvs []udb.KeyValue) {
	t.Helper()
	for len(kvs) > 0 {
		n := min(len(kvs), 50)
		batch := kvs[:n]
		if _, err := db.Transact(context.Background(), func(tx udb.Transaction) (any, error) {
			for _, kv := range batch {
				tx.Set(kv.Key, kv.Value)
			}
			return nil, nil
		}); err != nil {
			t.Fatalf("loading the fixture: %v", err)
		}
		kvs = kvs[n:]
	}
}

// dump reads db's whole normal key space.
func dump(t testing.TB, db udb.Database) []udb.KeyValue {
	t.Helper()
	var out []udb.KeyValue
	cursor := []byte{}
	for {
		v, err := db.ReadTransact(context.Background(), func(tr udb.ReadTransaction) (any, error) {
			return tr.GetRange(udb.FirstGreaterOrEqual(cursor), udb.FirstGreaterOrEqual([]byte{0xff}), udb.RangeOptions{Limit: 200}).All(context.Background())
		})
		if err != nil {
			t.Fatalf("reading the key space: %v", err)
		}
		kvs := v.([]udb.KeyValue)
		out = append(out, kvs...)
		if len(kvs) < 200 {
			return out
		}
		cursor = udb.KeyAfter(kvs[len(kvs)-1].Key)
	}
}

func sorted(kvs []udb.KeyValue) []udb.KeyValue {
	out := append([]udb.KeyValue(nil), kvs...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && bytes.Compare(out[j-1].Key, out[j].Key) > 0; j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

func sameKeySpace(t *testing.T, got, want []udb.KeyValue) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("destination holds %d keys, want %d", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) {
			t.Fatalf("row %d: got key %q (%d-byte value), want key %q (%d-byte value)",
				i, trim(got[i].Key), len(got[i].Value), trim(want[i].Key), len(want[i].Value))
		}
		if got[i].Value == nil {
			t.Fatalf("row %d (key %q): value is nil, want a present (possibly empty) value", i, trim(got[i].Key))
		}
	}
}

func trim(b []byte) []byte {
	if len(b) > 40 {
		return b[:40]
	}
	return b
}

func statsOf(kvs []udb.KeyValue) Stats {
	var s Stats
	for _, kv := range kvs {
		s.Keys++
		s.Bytes += int64(len(kv.Key) + len(kv.Value))
	}
	return s
}

// roundTrip exports src, imports into dst and checks dst equals want.
func roundTrip(t *testing.T, src, dst udb.Database, want []udb.KeyValue) {
	t.Helper()
	ctx := t.Context()
	var buf bytes.Buffer
	var calls []Stats
	st, err := Export(ctx, src, &buf, Options{Progress: func(s Stats) { calls = append(calls, s) }})
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
	if ws := statsOf(want); st != ws {
		t.Fatalf("Export stats %+v, want %+v", st, ws)
	}
	checkProgress(t, "Export", calls, st)

	calls = nil
	st, err = Import(ctx, dst, bytes.NewReader(buf.Bytes()), Options{Progress: func(s Stats) { calls = append(calls, s) }})
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if ws := statsOf(want); st != ws {
		t.Fatalf("Import stats %+v, want %+v", st, ws)
	}
	checkProgress(t, "Import", calls, st)
	sameKeySpace(t, dump(t, dst), want)
}

// checkProgress: several calls, never decreasing, the last equal to the total.
func checkProgress(t *testing.T, what string, calls []Stats, final Stats) {
	t.Helper()
	if final.Keys > 100 && len(calls) < 3 {
		t.Errorf("%s reported progress %d times for %d keys in small chunks; want one call per chunk", what, len(calls), final.Keys)
	}
	for i := 1; i < len(calls); i++ {
		if calls[i].Keys < calls[i-1].Keys || calls[i].Bytes < calls[i-1].Bytes {
			t.Errorf("%s progress went backwards: %+v then %+v", what, calls[i-1], calls[i])
		}
	}
	if len(calls) == 0 || calls[len(calls)-1] != final {
		t.Errorf("%s: last progress call %v, want the final stats %+v", what, calls, final)
	}
}

func TestEmbeddedToEmbedded(t *testing.T) {
	smallChunks(t)
	kvs := fixture()
	src := open(t, "mem://")
	load(t, src, kvs)
	dst := open(t, "file://"+t.TempDir())
	roundTrip(t, src, dst, sorted(kvs))
}

func TestEmptyStore(t *testing.T) {
	var buf bytes.Buffer
	st, err := Export(t.Context(), open(t, "mem://"), &buf, Options{})
	if err != nil || st != (Stats{}) {
		t.Fatalf("Export of an empty store: %+v, %v", st, err)
	}
	dst := open(t, "mem://")
	st, err = Import(t.Context(), dst, &buf, Options{})
	if err != nil || st != (Stats{}) {
		t.Fatalf("Import of an empty export: %+v, %v", st, err)
	}
	if got := dump(t, dst); len(got) != 0 {
		t.Fatalf("destination holds %d keys, want none", len(got))
	}
}

func TestExportSkipsSystemKeys(t *testing.T) {
	src := open(t, "mem://")
	if _, err := src.Transact(t.Context(), func(tx udb.Transaction) (any, error) {
		if err := tx.Options().SetAccessSystemKeys(); err != nil {
			return nil, err
		}
		tx.Set([]byte("a"), []byte("1"))
		tx.Set([]byte("\xff/system"), []byte("2"))
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	st, err := Export(t.Context(), src, &buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if st.Keys != 1 {
		t.Fatalf("exported %d keys, want 1 (system keys stay behind)", st.Keys)
	}
}

func TestImportRefusesNonEmpty(t *testing.T) {
	src := open(t, "mem://")
	load(t, src, []udb.KeyValue{{Key: []byte("new"), Value: []byte("1")}})
	var buf bytes.Buffer
	if _, err := Export(t.Context(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	dst := open(t, "mem://")
	old := []udb.KeyValue{{Key: []byte("old"), Value: []byte("0")}}
	load(t, dst, old)

	_, err := Import(t.Context(), dst, bytes.NewReader(buf.Bytes()), Options{})
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte("not empty")) || !bytes.Contains([]byte(err.Error()), []byte(`"old"`)) {
		t.Fatalf("Import into a non-empty store: %v; want an error naming a key it holds", err)
	}
	sameKeySpace(t, dump(t, dst), old)

	if _, err := Import(t.Context(), dst, bytes.NewReader(buf.Bytes()), Options{Overwrite: true}); err != nil {
		t.Fatalf("Import with Overwrite: %v", err)
	}
	sameKeySpace(t, dump(t, dst), []udb.KeyValue{{Key: []byte("new"), Value: []byte("1")}})
}

// TestExportOutlivesWindow moves the embedded store's clock past the MVCC
// window between two chunks: by default Export goes on at a newer version
// and still writes every key; with RequireSnapshot it fails with 1007.
func TestExportOutlivesWindow(t *testing.T) {
	smallChunks(t)
	kvs := fixture()
	src := open(t, "mem://")
	load(t, src, kvs)
	clock, ok := src.(udb.Clock)
	if !ok {
		t.Fatal("the embedded driver does not implement udb.Clock")
	}
	age := func(s Stats) {
		if s.Keys > 0 && s.Keys < int64(len(kvs)) {
			clock.AdvanceVersions(udb.MVCCWindowVersions + 1)
		}
	}

	var buf bytes.Buffer
	if _, err := Export(t.Context(), src, &buf, Options{Progress: age}); err != nil {
		t.Fatalf("Export across the window: %v", err)
	}
	dec := newDecoder(bytes.NewReader(buf.Bytes()))
	if err := dec.header(); err != nil {
		t.Fatal(err)
	}
	dst := open(t, "mem://")
	if _, err := Import(t.Context(), dst, bytes.NewReader(buf.Bytes()), Options{}); err != nil {
		t.Fatal(err)
	}
	sameKeySpace(t, dump(t, dst), sorted(kvs))

	_, err := Export(t.Context(), src, &bytes.Buffer{}, Options{Progress: age, RequireSnapshot: true})
	if !udb.HasCode(err, udb.CodeTransactionTooOld) {
		t.Fatalf("Export with RequireSnapshot across the window: %v; want transaction_too_old", err)
	}
}

func TestImportContextCancelled(t *testing.T) {
	smallChunks(t)
	src := open(t, "mem://")
	load(t, src, fixture())
	var buf bytes.Buffer
	if _, err := Export(t.Context(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	dst := open(t, "mem://")
	ctx, cancel := context.WithCancel(t.Context())
	_, err := Import(ctx, dst, &buf, Options{Progress: func(Stats) { cancel() }})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Import with a cancelled context: %v; want context.Canceled", err)
	}
	if got := dump(t, dst); len(got) != 0 {
		t.Fatalf("after a cancelled import the destination holds %d keys, want none", len(got))
	}
}

// validStream is a small export of several blocks.
func validStream(t *testing.T) []byte {
	t.Helper()
	e := exportChunkBytes
	exportChunkBytes = 64
	defer func() { exportChunkBytes = e }()
	src := open(t, "mem://")
	var kvs []udb.KeyValue
	for i := range 12 {
		kvs = append(kvs, udb.KeyValue{Key: fmt.Appendf(nil, "k%02d", i), Value: bytes.Repeat([]byte{byte(i)}, 20)})
	}
	load(t, src, kvs)
	var buf bytes.Buffer
	if _, err := Export(t.Context(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// importBad imports a damaged stream into dst, which must stay empty, and
// returns the error.
func importBad(t *testing.T, dst udb.Database, stream []byte) error {
	t.Helper()
	_, err := Import(t.Context(), dst, bytes.NewReader(stream), Options{})
	if err == nil {
		return nil
	}
	if got := dump(t, dst); len(got) != 0 {
		t.Fatalf("after a failed import (%v) the destination holds %d keys, want none", err, len(got))
	}
	return err
}

func TestTruncation(t *testing.T) {
	stream := validStream(t)
	dst := open(t, "mem://")
	for n := 0; n < len(stream); n++ {
		err := importBad(t, dst, stream[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("stream cut to %d of %d bytes: %v; want ErrTruncated", n, len(stream), err)
		}
	}
	if _, err := Import(t.Context(), dst, bytes.NewReader(stream), Options{}); err != nil {
		t.Fatalf("the whole stream: %v", err)
	}
}

func TestCorruption(t *testing.T) {
	stream := validStream(t)
	dst := open(t, "mem://")
	// Every flipped bit must be caught: as corruption, or as a truncation
	// when it makes a length point past the end.
	for i := range stream {
		for _, bit := range []byte{0x01, 0x80} {
			bad := bytes.Clone(stream)
			bad[i] ^= bit
			err := importBad(t, dst, bad)
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrTruncated) {
				t.Fatalf("byte %d of %d flipped (%#02x): %v; want ErrCorrupt or ErrTruncated", i, len(stream), bit, err)
			}
		}
	}
}

func TestStreamErrors(t *testing.T) {
	stream := validStream(t)
	// Locate the blocks, to drop and swap whole ones (each keeps a valid
	// checksum, so only the digest can tell).
	var blocks [][2]int
	dec := newDecoder(bytes.NewReader(stream))
	if err := dec.header(); err != nil {
		t.Fatal(err)
	}
	for {
		at := int(dec.off)
		_, end, err := dec.next()
		if err != nil {
			t.Fatal(err)
		}
		if end {
			break
		}
		blocks = append(blocks, [2]int{at, int(dec.off)})
	}
	if len(blocks) < 3 {
		t.Fatalf("the test stream has %d blocks, want at least 3", len(blocks))
	}
	b0, b1 := blocks[0], blocks[1]
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	cases := []struct {
		name   string
		stream []byte
		want   error
		text   string
	}{
		{"empty", nil, ErrTruncated, "empty"},
		{"not an export", []byte("PGDMP this is something else entirely"), ErrCorrupt, "not a berth key-space export"},
		{"future version", func() []byte {
			b := bytes.Clone(stream)
			b[9] = 2
			return b
		}(), ErrCorrupt, "checksum"},
		{"block dropped", cat(stream[:b0[0]], stream[b1[0]:]), ErrCorrupt, "digest"},
		{"blocks swapped", cat(stream[:b0[0]], stream[b1[0]:b1[1]], stream[b0[0]:b0[1]], stream[b1[1]:]), ErrCorrupt, "does not sort after"},
		{"block repeated", cat(stream[:b1[0]], stream[b0[0]:b0[1]], stream[b1[0]:]), ErrCorrupt, "does not sort after"},
		{"trailing data", cat(stream, []byte{0}), ErrCorrupt, "follows the trailer"},
		{"no trailer", stream[:blocks[len(blocks)-1][1]], ErrTruncated, "without the end marker"},
	}
	dst := open(t, "mem://")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := importBad(t, dst, c.stream)
			if !errors.Is(err, c.want) || !bytes.Contains([]byte(err.Error()), []byte(c.text)) {
				t.Fatalf("got %v; want %v mentioning %q", err, c.want, c.text)
			}
		})
	}
}

// TestVersionCheck rewrites the header's version with a valid checksum.
func TestVersionCheck(t *testing.T) {
	bad := validStream(t)
	binary.BigEndian.PutUint16(bad[len(magic):], 7)
	binary.BigEndian.PutUint32(bad[headerLen-4:], crc32.Checksum(bad[:headerLen-4], castagnoli))
	_, err := Import(t.Context(), open(t, "mem://"), bytes.NewReader(bad), Options{})
	if !errors.Is(err, ErrCorrupt) || !bytes.Contains([]byte(err.Error()), []byte("format version 7 is not supported")) {
		t.Fatalf("version 7 stream: %v; want an unsupported-version error", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it must return an error
// or a verified stream, never panic or allocate without bound.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte(magic))
	var buf bytes.Buffer
	enc, _ := newEncoder(&buf, 42)
	enc.add([]byte("a"), []byte("1"))
	enc.add([]byte("b"), nil)
	_ = enc.finish(43)
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		d := newDecoder(bytes.NewReader(data))
		if err := d.header(); err != nil {
			return
		}
		for {
			recs, end, err := d.next()
			if err != nil || end {
				return
			}
			if len(recs) == 0 {
				t.Fatal("a block decoded with no records")
			}
		}
	})
}
