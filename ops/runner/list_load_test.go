package runner

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/berthhq/berth/keys"
	"github.com/berthhq/berth/ops/internal/opstest"
	"github.com/berthhq/berth/pkg/id"
	"github.com/berthhq/berth/pkg/rerr"
	"github.com/berthhq/berth/pkg/tuple"
	"github.com/berthhq/berth/pkg/udb"
)

// addActorCommands writes n rows of the actor command subspace of runner rid, as Rivet's
// ActorLastCommandIdxKey and ActorCommandKey lay them out (LAST_COMMAND_IDX 107, COMMAND
// 108), each command value size bytes.
func addActorCommands(t *testing.T, db udb.Database, rid id.ID, n, size int) {
	t.Helper()
	prefix, _, _ := keys.RunnerFieldsRange(rid)
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		aid := id.New(1)
		for i := range n {
			if i%2 == 0 {
				tx.Set(tuple.Tuple{int(keys.RunnerFieldActor), 107, aid, i}.AppendPack(append([]byte(nil), prefix...)), []byte{0, 0, 0, 0, 0, 0, 0, 1})
			} else {
				tx.Set(tuple.Tuple{int(keys.RunnerFieldActor), 108, aid, i, 0}.AppendPack(append([]byte(nil), prefix...)), make([]byte, size))
			}
		}
		return nil, nil
	})
}

// readRunner reads rid with the API's read (as Get and ListForNs do) through a counting
// snapshot view, and with load, which reads one key per field (record.Reader), and checks
// that both agree. It returns the runner, or the error, and the range reads made.
func readRunner(t *testing.T, db udb.Database, rid id.ID) (Runner, bool, int, error) {
	t.Helper()
	var got Runner
	var found bool
	var gotErr error
	ranges := 0
	opstest.Read(t, db, func(r udb.ReadTransaction) (any, error) {
		c := &countingReader{ReadTransaction: r.Snapshot()}
		var sc scratch
		got, found, gotErr = startRecord(c, rid).finish(ctx, c, dc, &sc)
		for _, kv := range sc.rows {
			if kv.Key != nil || kv.Value != nil {
				t.Errorf("finish kept a reference to a row in its scratch space")
			}
		}
		if c.gets != 0 {
			t.Errorf("%d point reads; want none", c.gets)
		}
		ranges = c.ranges
		want, wantFound, wantErr := load(ctx, r.Snapshot(), rid, dc)
		if !reflect.DeepEqual(got, want) || found != wantFound || (gotErr == nil) != (wantErr == nil) ||
			gotErr != nil && !rerr.Is(gotErr, rerr.CodeStoreCorrupt) {
			t.Errorf("runner read:\n got %+v, %v, %v\nwant %+v, %v, %v (read one key per field)", got, found, gotErr, want, wantFound, wantErr)
		}
		return nil, nil
	})
	return got, found, ranges, gotErr
}

func TestRunnerReadOneRange(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	plain := register(t, db, input(ns, "pool", "plain", 1)).RunnerID
	otherName := register(t, db, input(ns, "other-pool", "other", 4)).RunnerID // between runners named pool in list order

	md := input(ns, "pool", "metadata", 2)
	md.Metadata = json.RawMessage(`{"big":"` + strings.Repeat("x", 30_000) + `"}`) // 4 chunks
	withMetadata := register(t, db, md).RunnerID

	drained := register(t, db, input(ns, "pool", "drained", 3)).RunnerID
	opstest.Write(t, db, func(tx udb.Transaction) (DrainOutput, error) {
		return Drain(ctx, tx, DrainInput{RunnerID: drained, NowMs: 4})
	})
	stopped := register(t, db, input(ns, "pool", "stopped", 5)).RunnerID
	opstest.Write(t, db, func(tx udb.Transaction) (StopOutput, error) {
		return Stop(ctx, tx, StopInput{RunnerID: stopped, NowMs: 6})
	})

	withCommands := func(key string, now int64, commands int) id.ID {
		in := input(ns, "pool", key, now)
		in.Metadata = md.Metadata
		rid := register(t, db, in).RunnerID
		addActorCommands(t, db, rid, commands, 1000)
		return rid
	}
	few := withCommands("few-commands", 7, 6)                  // still below the row limit with its fields
	many := withCommands("many-commands", 8, 3*recordRowLimit) // past it
	limit := withCommands("limit", 9, recordRowLimit)          // the limit reached inside the subspace

	bigIn := input(ns, "pool", "big-metadata", 10)
	bigIn.Metadata = json.RawMessage(`{"big":"` + strings.Repeat("y", 250_000) + `"}`) // 26 chunks
	big := register(t, db, bigIn).RunnerID                                             // the limit reached inside the metadata
	bigIn.Key, bigIn.NewRunnerID = "big-and-commands", id.New(1)
	bigCommands := register(t, db, bigIn).RunnerID
	addActorCommands(t, db, bigCommands, 10, 1000)

	for _, c := range []struct {
		name       string
		rid        id.ID
		wantRanges int
	}{
		{"plain", plain, 1},
		{"other name", otherName, 1},
		{"with metadata", withMetadata, 1},
		{"drained", drained, 1},
		{"stopped", stopped, 1},
		{"a few actor commands", few, 1},
		{"many actor commands", many, 2},
		{"row limit reached in the actor commands", limit, 2},
		{"row limit reached in the metadata", big, 2},
		{"actor commands and big metadata", bigCommands, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, found, ranges, err := readRunner(t, db, c.rid)
			if err != nil || !found || got.RunnerID != c.rid {
				t.Fatalf("got %+v, %v, %v", got, found, err)
			}
			if ranges != c.wantRanges {
				t.Errorf("%d range reads; want %d", ranges, c.wantRanges)
			}
		})
	}
	if _, found, ranges, err := readRunner(t, db, id.New(1)); found || err != nil || ranges != 1 {
		t.Errorf("unknown runner: found %v, %v, %d range reads", found, err, ranges)
	}
	// The page of ListForNs is the same runners.
	page, err := list(db, ListForNsInput{Namespace: ns, IncludeStopped: true})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, run := range page.Runners {
		names[run.Name] = true
		if want := get(t, db, run.RunnerID); !reflect.DeepEqual(run, want) {
			t.Errorf("listed %+v\n   got %+v", run, want)
		}
	}
	if len(page.Runners) != 10 || len(names) != 2 {
		t.Errorf("listed %d runners of %d names; want 10 of 2", len(page.Runners), len(names))
	}
}

// Keys the runner object does not read are left alone, as a read of one key per field does:
// unknown fields, keys below a field other than the metadata, the actor command subspace.
func TestRunnerReadIgnoresOtherKeys(t *testing.T) {
	db := opstest.Open(t)
	ns := id.New(1)
	rid := register(t, db, input(ns, "pool", "k", 1)).RunnerID
	want := get(t, db, rid)
	prefix, _, _ := keys.RunnerFieldsRange(rid)
	opstest.Write(t, db, func(tx udb.Transaction) (any, error) {
		for _, tt := range []tuple.Tuple{{int(keys.RunnerFieldVersion), "x"}, {500}, {500, 1}, {int(keys.RunnerFieldName), 0}, {int(keys.RunnerFieldActor)}} {
			tx.Set(tt.AppendPack(append([]byte(nil), prefix...)), []byte("junk"))
		}
		return nil, nil
	})
	got, found, _, err := readRunner(t, db, rid)
	if err != nil || !found || !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, %v, %v; want %+v", got, found, err, want)
	}
}

// Stored bytes that do not decode, a missing required field and misnumbered metadata chunks
// are store.corrupt, through Get and ListForNs alike.
func TestRunnerReadCorrupt(t *testing.T) {
	for name, spoil := range map[string]func(tx udb.Transaction, rid id.ID){
		"bad version":   func(tx udb.Transaction, rid id.ID) { tx.Set(keys.RunnerVersionKey{RunnerID: rid}.Pack(), []byte{1}) },
		"bad create_ts": func(tx udb.Transaction, rid id.ID) { tx.Set(keys.RunnerCreateTsKey{RunnerID: rid}.Pack(), []byte{1}) },
		"bad name": func(tx udb.Transaction, rid id.ID) {
			tx.Set(keys.RunnerDataNameKey{RunnerID: rid}.Pack(), []byte{0xff})
		},
		"bad drain_ts":    func(tx udb.Transaction, rid id.ID) { tx.Set(keys.RunnerDrainTsKey{RunnerID: rid}.Pack(), []byte{1, 2}) },
		"no namespace":    func(tx udb.Transaction, rid id.ID) { tx.Clear(keys.RunnerNamespaceIDKey{RunnerID: rid}.Pack()) },
		"no total slots":  func(tx udb.Transaction, rid id.ID) { tx.Clear(keys.RunnerTotalSlotsKey{RunnerID: rid}.Pack()) },
		"chunk 0 missing": func(tx udb.Transaction, rid id.ID) { tx.Clear(keys.RunnerMetadataKey{RunnerID: rid}.ChunkKey(0)) },
		"a chunk too many": func(tx udb.Transaction, rid id.ID) {
			tx.Set(keys.RunnerMetadataKey{RunnerID: rid}.ChunkKey(5), []byte("x"))
		},
		"bad metadata": func(tx udb.Transaction, rid id.ID) {
			tx.Set(keys.RunnerMetadataKey{RunnerID: rid}.ChunkKey(0), []byte{9, 9})
		},
		"a key below the metadata": func(tx udb.Transaction, rid id.ID) {
			prefix, _, _ := keys.RunnerFieldsRange(rid)
			tx.Set(tuple.Tuple{int(keys.RunnerFieldMetadata), 0, "x"}.AppendPack(append([]byte(nil), prefix...)), nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			db := opstest.Open(t)
			ns := id.New(1)
			in := input(ns, "pool", "k", 1)
			in.Metadata = json.RawMessage(`{"a":"` + strings.Repeat("x", 15_000) + `"}`) // 2 chunks
			rid := register(t, db, in).RunnerID
			opstest.Write(t, db, func(tx udb.Transaction) (any, error) { spoil(tx, rid); return nil, nil })
			if _, _, _, err := readRunner(t, db, rid); !rerr.Is(err, rerr.CodeStoreCorrupt) {
				t.Errorf("read = %v; want store.corrupt", err)
			}
			if _, err := list(db, ListForNsInput{Namespace: ns}); !rerr.Is(err, rerr.CodeStoreCorrupt) {
				t.Errorf("list = %v; want store.corrupt", err)
			}
		})
	}
}

// FuzzDecodeRecord builds a runner's rows from the input, any fields with any values and
// any metadata chunk numbers: decodeRecord never panics, and fails only with store.corrupt.
func FuzzDecodeRecord(f *testing.F) {
	f.Add([]byte{15, 8, 0, 0, 1, 0, 0, 0, 0, 5, 19, 4, 'p', 'o', 'o', 'l'})
	f.Add([]byte{15, 8, 0, 0, 0, 0, 0, 0, 0, 1, 44, 3, 1, 2, 3, 200, 1, 9})
	f.Fuzz(func(t *testing.T, in []byte) {
		rid := id.New(1)
		prefix, _, _ := keys.RunnerFieldsRange(rid)
		// Each row: a tag byte (200 and up: a metadata chunk numbered tag-200), a length
		// byte, then the value.
		rowsByKey := map[string][]byte{}
		for len(in) >= 2 {
			tag, n := int(in[0]), int(in[1])
			in = in[2:]
			n = min(n, len(in))
			var key []byte
			if tag >= 200 {
				key = tuple.Tuple{int(keys.RunnerFieldMetadata), tag - 200}.AppendPack(append([]byte(nil), prefix...))
			} else {
				key = tuple.Tuple{tag}.AppendPack(append([]byte(nil), prefix...))
			}
			rowsByKey[string(key)] = in[:n]
			in = in[n:]
		}
		var rows []udb.KeyValue
		for k, v := range rowsByKey {
			rows = append(rows, udb.KeyValue{Key: []byte(k), Value: v})
		}
		slices.SortFunc(rows, func(a, b udb.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
		_, _, err := decodeRecord(rid, prefix, rows, &scratch{})
		if err != nil && !rerr.Is(err, rerr.CodeStoreCorrupt) {
			t.Fatalf("decodeRecord: %v; want store.corrupt", err)
		}
	})
}
