package keys

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/id"
)

// valueCase is one key type's value codec with a sample value and, where
// pinned, its exact encoding.
type valueCase struct {
	name      string
	encode    func() []byte
	encodeAny func(any) []byte // encodes a value of the key's type
	decode    func([]byte) (any, error)
	want      any
	wantHex   string // "" if not pinned
	// anyLength is set for raw strings, which have no framing: every
	// length is valid.
	anyLength bool
}

func vc[V any](k Key[V], v V, wantHex string) valueCase {
	_, isString := any(v).(string)
	_, isChunked := any(k).(interface{ ChunkKey(int) []byte })
	return valueCase{
		anyLength: isString && !isChunked,
		name:      fmt.Sprintf("%T", k),
		encode:    func() []byte { return k.Encode(v) },
		encodeAny: func(x any) []byte { return k.Encode(x.(V)) },
		decode:    func(b []byte) (any, error) { return k.Decode(b) },
		want:      v,
		wantHex:   wantHex,
	}
}

func idHex(v id.ID) string { return hex.EncodeToString(v[:]) }

func allValueCases() []valueCase {
	wf := testID(30)
	const ek = "e"
	meta := `{"region":"fra"}`
	return []valueCase{
		vc(NamespaceNameKey{}, "default", "64656661756c74"),
		vc(SchemaVersionKey{}, uint32(1), "00000001"),
		vc(RunnerPoolErrorKey{}, PoolError{Error: json.RawMessage(`{"serverless_http_error":{"status_code":503}}`), Successes: 2},
			"00000002"+hex.EncodeToString([]byte(`{"serverless_http_error":{"status_code":503}}`))),
		vc(ServerlessDemandKey{}, 3, "0300000000000000"),
		vc(NamespaceDisplayNameKey{}, "Default", ""),
		vc(NamespaceCreateTsKey{}, 0x0102030405060708, "0102030405060708"),
		vc(NamespaceByNameKey{}, ns1, idHex(ns1)),

		vc(RunnerCreateTsKey{}, -1, "ffffffffffffffff"),
		vc(RunnerLastPingTsKey{}, 1700000000000, ""),
		vc(RunnerStopTsKey{}, 1, "0000000000000001"),
		vc(RunnerDrainTsKey{}, 2, ""),
		vc(RunnerConnectedTsKey{}, 3, ""),
		vc(RunnerExpiredTsKey{}, 4, ""),
		vc(RunnerRemainingSlotsKey{}, 0x01020304, "01020304"),
		vc(RunnerTotalSlotsKey{}, 100, ""),
		vc(RunnerVersionKey{}, 7, "00000007"),
		vc(RunnerLastRttKey{}, 12, ""),
		vc(RunnerProtocolVersionKey{}, 0x0102, "0102"),
		vc(RunnerWorkflowIDKey{}, wf, idHex(wf)),
		vc(RunnerWorkflowIDKey{}, id.ID{}, strings.Repeat("00", 19)), // berth: no workflow
		vc(RunnerNamespaceIDKey{}, ns1, ""),
		vc(RunnerDataNameKey{}, "pool", "706f6f6c"),
		vc(RunnerKeyKey{}, "höst", ""),
		vc(RunnerKeyKey{}, "", ""),
		vc(RunnerConnIDKey{}, rid1, ""),
		// version 1 LE, str: uvarint 16, the JSON.
		vc(RunnerMetadataKey{}, meta, "0100"+"10"+hex.EncodeToString([]byte(meta))),

		vc(EnvoyCreateTsKey{Namespace: ns1, EnvoyKey: ek}, 5, ""),
		vc(EnvoyExpiredTsKey{}, 6, ""),
		vc(EnvoyStopTsKey{}, 7, ""),
		vc(EnvoyConnectedTsKey{}, 8, ""),
		vc(EnvoyLastPingTsKey{}, 9, ""),
		vc(EnvoyPoolNameKey{}, "pool", ""),
		vc(EnvoyVersionKey{}, 3, "00000003"),
		vc(EnvoyVirtualNodesKey{}, 64, "40"),
		vc(EnvoyProtocolVersionKey{}, 1, "0001"),
		vc(EnvoyLastRttKey{}, 25, ""),
		// Atomic counters are little-endian.
		vc(EnvoySlotsKey{}, 1, "0100000000000000"),
		vc(EnvoySlotsKey{}, -1, "ffffffffffffffff"),
		vc(EnvoySlotsKey{}, 0x0102, "0201000000000000"),
		vc(EnvoyConnIDKey{}, rid1, idHex(rid1)),
		vc(EnvoyMetadataKey{}, "{}", "0100"+"02"+"7b7d"),

		vc(ActorCreateTsKey{}, 11, ""),
		vc(ActorWorkflowIDKey{}, wf, ""),
		vc(ActorNamespaceIDKey{}, ns2, ""),
		vc(ActorDataNameKey{}, "counter", ""),
		vc(ActorKeyKey{}, "k1", ""),
		vc(ActorRunnerNameSelectorKey{}, "pool", ""),
		vc(ActorPoolNameKey{}, "pool", ""),
		vc(ActorVersionKey{}, 2, "00000002"),
		vc(ActorGenerationKey{}, 9, ""),
		vc(ActorRunnerIDKey{}, rid1, ""),
		vc(ActorEnvoyKeyKey{}, "e", ""),
		vc(ActorConnectableKey{}, Empty{}, ""),
		vc(ActorSleepTsKey{}, 12, ""),
		vc(ActorDestroyTsKey{}, 13, ""),

		vc(ActiveRunnerKey{}, wf, idHex(wf)),
		vc(AllRunnerKey{}, wf, ""),
		vc(ActiveRunnerByNameKey{}, wf, ""),
		vc(AllRunnerByNameKey{}, rid1, ""),
		// version 1 LE, data(19, runner id), data(19, workflow id).
		vc(RunnerByKeyKey{}, RunnerByKeyValue{RunnerID: rid1, WorkflowID: wf}, "0100"+"13"+idHex(rid1)+"13"+idHex(wf)),
		vc(RunnerByKeyKey{}, RunnerByKeyValue{RunnerID: rid1}, ""),
		vc(RunnerNameKey{}, Empty{}, ""),
		// version 2 LE, data(19, workflow id), u32 LE 5, u32 LE 10, u16 LE 7.
		vc(RunnerAllocIdxKey{}, RunnerAllocIdxValue{WorkflowID: wf, RemainingSlots: 5, TotalSlots: 10, ProtocolVersion: 7},
			"0200"+"13"+idHex(wf)+"05000000"+"0a000000"+"0700"),
		vc(ActiveEnvoyKey{}, Empty{}, ""),
		vc(ActiveEnvoyByNameKey{}, Empty{}, ""),
		vc(EnvoyLoadBalancerIdxKey{}, Empty{}, ""),
		vc(ActiveActorKey{}, wf, ""),
		vc(AllActorKey{}, wf, ""),
		// version 1 LE, data(19, workflow id), bool.
		vc(ActorByKeyKey{}, ActorByKeyValue{WorkflowID: wf, IsDestroyed: true}, "0100"+"13"+idHex(wf)+"01"),
		vc(ActorByKeyKey{}, ActorByKeyValue{WorkflowID: wf}, "0100"+"13"+idHex(wf)+"00"),
		// version 1 LE, str.
		vc(ActorNameKey{}, ActorNameValue{Metadata: `{"a":1}`}, "0100"+"07"+"7b2261223a317d"),
		vc(ActorNameKey{}, ActorNameValue{}, "0100"+"00"),
		// version 1 LE, data(19, actor id), uint 300 (LEB128 ac 02).
		vc(KeyReservationKey{}, KeyReservation{ActorID: wf, ReservedAtMs: 300}, "0100"+"13"+idHex(wf)+"ac02"),
		vc(KeyReservationKey{}, KeyReservation{ActorID: wf, ReservedAtMs: 1700000000000}, ""),
		vc(KeyFenceKey{}, 1700000000000, ""),
	}
}

func TestValuesRoundTrip(t *testing.T) {
	for _, c := range allValueCases() {
		t.Run(c.name, func(t *testing.T) {
			b := c.encode()
			if c.wantHex != "" && hex.EncodeToString(b) != c.wantHex {
				t.Fatalf("Encode(%v) = %x, want %s", c.want, b, c.wantHex)
			}
			got, err := c.decode(b)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("Decode(Encode(%v)) = %v, %v", c.want, got, err)
			}
		})
	}
}

// TestValuesRejectWrongLength checks that each decoder refuses its encoding
// with a byte more or a byte less.
func TestValuesRejectWrongLength(t *testing.T) {
	for _, c := range allValueCases() {
		t.Run(c.name, func(t *testing.T) {
			if c.anyLength {
				t.Skip("raw strings have no length to check")
			}
			b := c.encode()
			bad := [][]byte{append(bytes.Clone(b), 0)}
			if len(b) > 0 {
				bad = append(bad, b[:len(b)-1])
			}
			for _, x := range bad {
				_, err := c.decode(x)
				if !errors.Is(err, ErrBadValue) {
					t.Errorf("Decode(%x) = %v, want ErrBadValue", x, err)
				} else if !strings.Contains(err.Error(), strings.TrimPrefix(c.name, "keys.")) {
					t.Errorf("error %q does not name the key type", err)
				}
			}
		})
	}
}

func TestValueDecodeErrors(t *testing.T) {
	wf := testID(30)
	wfData := "13" + idHex(wf)
	v0 := wf
	v0[0] = 0
	tests := []struct {
		name   string
		decode func([]byte) error
		hex    string
		msg    string
	}{
		{"string not utf-8", dec(RunnerDataNameKey{}), "ff", "not valid UTF-8"},
		{"id of 16 bytes", dec(RunnerWorkflowIDKey{}), strings.Repeat("01", 16), "wrong length"},
		{"id version 0", dec(RunnerWorkflowIDKey{}), idHex(v0), "unsupported version"},
		{"empty with bytes", dec(RunnerNameKey{}), "00", "want none"},
		{"by key: no version", dec(RunnerByKeyKey{}), "01", "too short"},
		{"by key: unknown version", dec(RunnerByKeyKey{}), "0200" + wfData + wfData, "unknown version 2"},
		{"by key: short id", dec(RunnerByKeyKey{}), "0100" + "12" + idHex(wf)[:36] + wfData, "wrong length"},
		{"by key: length past end", dec(RunnerByKeyKey{}), "0100" + "7f" + idHex(wf), "only 19 bytes left"},
		{"by key: truncated length", dec(RunnerByKeyKey{}), "0100" + wfData + "80", "truncated length"},
		{"by key: non-canonical length", dec(RunnerByKeyKey{}), "0100" + "9300" + idHex(wf) + wfData, "non-canonical"},
		{"by key: overflowing length", dec(RunnerByKeyKey{}), "0100" + "ffffffffffffffffffff01", "overflows"},
		{"actor by key: bool 2", dec(ActorByKeyKey{}), "0100" + wfData + "02", "bool byte is 2"},
		{"actor by key: no bool", dec(ActorByKeyKey{}), "0100" + wfData, "truncated bool"},
		{"alloc: unknown version", dec(RunnerAllocIdxKey{}), "0300" + wfData + "05000000" + "0a000000" + "0700", "unknown version 3"},
		{"alloc: v2 without protocol", dec(RunnerAllocIdxKey{}), "0200" + wfData + "05000000" + "0a000000", "truncated u16"},
		{"alloc: v1 with protocol", dec(RunnerAllocIdxKey{}), "0100" + wfData + "05000000" + "0a000000" + "0700", "2 bytes left"},
		{"alloc: short u32", dec(RunnerAllocIdxKey{}), "0200" + wfData + "0500", "truncated u32"},
		{"actor name: not utf-8", dec(ActorNameKey{}), "0100" + "01" + "ff", "not valid UTF-8"},
		{"metadata: unknown version", dec(RunnerMetadataKey{}), "0000" + "00", "unknown version 0"},
	}
	for _, tc := range tests {
		b, err := hex.DecodeString(tc.hex)
		if err != nil {
			t.Fatalf("%s: bad hex: %v", tc.name, err)
		}
		err = tc.decode(b)
		if !errors.Is(err, ErrBadValue) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: Decode(%s) = %v, want ErrBadValue containing %q", tc.name, tc.hex, err, tc.msg)
		}
	}
}

func dec[V any](k Key[V]) func([]byte) error {
	return func(b []byte) error { _, err := k.Decode(b); return err }
}

// TestAllocIdxValueV1 decodes a version 1 value, which Rivet wrote before
// protocol_version existed: it reads as protocol version 3.
func TestAllocIdxValueV1(t *testing.T) {
	wf := testID(30)
	b, _ := hex.DecodeString("0100" + "13" + idHex(wf) + "05000000" + "0a000000")
	got, err := RunnerAllocIdxKey{}.Decode(b)
	want := RunnerAllocIdxValue{WorkflowID: wf, RemainingSlots: 5, TotalSlots: 10, ProtocolVersion: 3}
	if err != nil || got != want {
		t.Fatalf("Decode(v1) = %+v, %v; want %+v", got, err, want)
	}
}
