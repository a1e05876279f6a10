package keys

import (
	"bytes"
	"testing"

	"github.com/berthhq/berth/pkg/tuple"
)

// runnerFieldKeys is every runner data key type, with the field ParseRunnerDataKey must name.
func runnerFieldKeys() []struct {
	key   packer
	field RunnerField
} {
	return []struct {
		key   packer
		field RunnerField
	}{
		{RunnerCreateTsKey{RunnerID: rid1}, RunnerFieldCreateTs},
		{RunnerDataNameKey{RunnerID: rid1}, RunnerFieldName},
		{RunnerWorkflowIDKey{RunnerID: rid1}, RunnerFieldWorkflowID},
		{RunnerLastPingTsKey{RunnerID: rid1}, RunnerFieldLastPingTs},
		{RunnerMetadataKey{RunnerID: rid1}, RunnerFieldMetadata},
		{RunnerRemainingSlotsKey{RunnerID: rid1}, RunnerFieldRemainingSlots},
		{RunnerTotalSlotsKey{RunnerID: rid1}, RunnerFieldTotalSlots},
		{RunnerNamespaceIDKey{RunnerID: rid1}, RunnerFieldNamespaceID},
		{RunnerVersionKey{RunnerID: rid1}, RunnerFieldVersion},
		{RunnerStopTsKey{RunnerID: rid1}, RunnerFieldStopTs},
		{RunnerDrainTsKey{RunnerID: rid1}, RunnerFieldDrainTs},
		{RunnerLastRttKey{RunnerID: rid1}, RunnerFieldLastRtt},
		{RunnerConnectedTsKey{RunnerID: rid1}, RunnerFieldConnectedTs},
		{RunnerExpiredTsKey{RunnerID: rid1}, RunnerFieldExpiredTs},
		{RunnerKeyKey{RunnerID: rid1}, RunnerFieldKey},
		{RunnerProtocolVersionKey{RunnerID: rid1}, RunnerFieldProtocolVersion},
		{RunnerConnIDKey{RunnerID: rid1}, RunnerFieldConnID},
	}
}

// actorCommandKey is a key of the actor command subspace (Rivet's ActorCommandKey).
func actorCommandKey() []byte {
	return pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagActor, tagCommand, aid1, 3, 17})
}

func TestParseRunnerDataKey(t *testing.T) {
	prefix, _, _ := RunnerFieldsRange(rid1)
	for _, c := range runnerFieldKeys() {
		f, chunk, ok := ParseRunnerDataKey(prefix, c.key.Pack())
		if !ok || f != c.field || chunk != NotChunk {
			t.Errorf("%T: got (%d, %d, %v), want (%d, NotChunk, true)", c.key, f, chunk, ok, c.field)
		}
	}
	md := RunnerMetadataKey{RunnerID: rid1}
	for _, n := range []int{0, 1, 255, 256, maxChunks} {
		f, chunk, ok := ParseRunnerDataKey(prefix, md.ChunkKey(n))
		if !ok || f != RunnerFieldMetadata || chunk != n {
			t.Errorf("metadata chunk %d: got (%d, %d, %v)", n, f, chunk, ok)
		}
	}
	nested := map[string][]byte{
		"an actor command":       actorCommandKey(),
		"two segments after":     pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagMetadata, 1, 2}),
		"a string after a field": pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagMetadata, "x"}),
		"a chunk past the last":  md.ChunkKey(maxChunks + 1),
		"a chunk of 2^64-1":      pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagMetadata, uint64(1<<64 - 1)}),
		"a negative chunk":       pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagMetadata, -1}),
		"a truncated chunk":      append(md.Pack(), 0x16, 0x01),
	}
	for name, key := range nested {
		want := RunnerFieldMetadata
		if name == "an actor command" {
			want = RunnerFieldActor
		}
		if f, chunk, ok := ParseRunnerDataKey(prefix, key); !ok || f != want || chunk != Nested {
			t.Errorf("%s (%x): got (%d, %d, %v), want (%d, Nested, true)", name, key, f, chunk, ok, want)
		}
	}
	bad := map[string][]byte{
		"another runner":           RunnerCreateTsKey{RunnerID: testID(11)}.Pack(),
		"the prefix alone":         prefix,
		"a string tag":             pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, "name"}),
		"a negative tag":           pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, -5}),
		"a huge tag":               pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, 1 << 20}),
		"a truncated field (0x16)": append(bytes.Clone(prefix), 0x16, 0x03),
		"truncated tag":            append(bytes.Clone(prefix), 0x15),
	}
	for name, key := range bad {
		if f, chunk, ok := ParseRunnerDataKey(prefix, key); ok {
			t.Errorf("%s (%x): got (%d, %d, true), want not ok", name, key, f, chunk)
		}
	}
}

// TestRunnerFieldsRange checks that the range holds every field key, every metadata chunk
// and the actor command subspace, that RunnerFieldsAfterActors lies after that subspace and
// before every field that follows it, and that no key of another runner falls inside.
func TestRunnerFieldsRange(t *testing.T) {
	prefix, begin, end := RunnerFieldsRange(rid1)
	if want := pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1}); !bytes.Equal(prefix, want) {
		t.Errorf("prefix %x, want %x", prefix, want)
	}
	if want := (RunnerCreateTsKey{RunnerID: rid1}).Pack(); !bytes.Equal(begin, want) {
		t.Errorf("begin %x, want %x", begin, want)
	}
	if want := append((RunnerConnIDKey{RunnerID: rid1}).Pack(), 0); !bytes.Equal(end, want) {
		t.Errorf("end %x, want %x", end, want)
	}
	if n := testing.AllocsPerRun(100, func() { RunnerFieldsRange(rid1) }); n != 1 {
		t.Errorf("RunnerFieldsRange makes %v allocations; want 1", n)
	}
	in := func(k []byte) bool { return bytes.Compare(k, begin) >= 0 && bytes.Compare(k, end) < 0 }
	after := RunnerFieldsAfterActors(rid1)
	actorBegin, actorEnd := prefixRange(pegboard.Pack(tuple.Tuple{tagRunner, tagData, rid1, tagActor}))
	if bytes.Compare(after, actorEnd) < 0 {
		t.Errorf("RunnerFieldsAfterActors %x is inside or before the actor subspace (ends %x)", after, actorEnd)
	}
	for _, c := range runnerFieldKeys() {
		k := c.key.Pack()
		if !in(k) {
			t.Errorf("%T %x is outside [%x, %x)", c.key, k, begin, end)
		}
		if c.field > RunnerFieldActor && bytes.Compare(k, after) < 0 {
			t.Errorf("%T sorts after the actor subspace but before RunnerFieldsAfterActors", c.key)
		}
		if c.field < RunnerFieldActor && bytes.Compare(k, actorBegin) >= 0 {
			t.Errorf("%T sorts inside or after the actor subspace", c.key)
		}
	}
	md := RunnerMetadataKey{RunnerID: rid1}
	for _, n := range []int{0, maxChunks} {
		if k := md.ChunkKey(n); !in(k) || bytes.Compare(k, after) < 0 {
			t.Errorf("metadata chunk %d %x is outside the range or before RunnerFieldsAfterActors", n, k)
		}
	}
	if !in(actorCommandKey()) {
		t.Errorf("actor command key %x is outside [%x, %x)", actorCommandKey(), begin, end)
	}
	for _, other := range []packer{RunnerConnIDKey{RunnerID: testID(9)}, RunnerCreateTsKey{RunnerID: testID(11)}, RunnerActorKey{RunnerID: rid1, ActorID: aid1}} {
		if in(other.Pack()) {
			t.Errorf("%T %x of another record is inside the range", other, other.Pack())
		}
	}
}

// FuzzParseRunnerDataKey: no panic, and a field key or chunk key packs back, canonically, to
// a key that parses the same.
func FuzzParseRunnerDataKey(f *testing.F) {
	prefix, _, _ := RunnerFieldsRange(rid1)
	for _, c := range runnerFieldKeys() {
		f.Add(c.key.Pack()[len(prefix):])
	}
	f.Add(RunnerMetadataKey{RunnerID: rid1}.ChunkKey(300)[len(prefix):])
	f.Add(actorCommandKey()[len(prefix):])
	f.Fuzz(func(t *testing.T, suffix []byte) {
		key := append(bytes.Clone(prefix), suffix...)
		field, chunk, ok := ParseRunnerDataKey(prefix, key)
		if !ok || chunk == Nested {
			return
		}
		again := runnerDataKey(rid1, int(field))
		if chunk != NotChunk {
			again = chunkKey(again, chunk)
		}
		f2, c2, ok := ParseRunnerDataKey(prefix, again)
		if !ok || f2 != field || c2 != chunk {
			t.Fatalf("%x parsed as (%d, %d); its canonical form %x as (%d, %d, %v)", key, field, chunk, again, f2, c2, ok)
		}
	})
}
