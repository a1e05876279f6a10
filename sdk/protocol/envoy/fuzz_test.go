package envoy

import (
	"bytes"
	"errors"
	"testing"

	"github.com/berthhq/berth/sdk/bare"
)

// Decoding must never panic; it fails with a *bare.DecodeError or gives a message that encodes
// back to exactly the input (the codec is canonical: one message, one encoding).

// referenceToRivet and referenceToEnvoy are frames printed by tests/npm/envoy-vectors.mjs
// (@rivetkit/engine-envoy-protocol 2.3.19), seeds beside the Go encodings of allToRivet/allToEnvoy.
var referenceToRivet = []string{
	"0001020162077b2278223a317d0161027b7d010e7b2270726f6265223a747275657d",                                                                                                         // Metadata
	"0d0f000000036e733102613109000000000000001753454c454354203f2c203f2c203f2c203f2c203f2c203f01060001ffffffffffffdfff023ff8000000000000027ff8000000000001030668c3a96c6c6f040200ff", // SqliteExecute
	"06010203040a0b0c0d03000202010d68616e646c6572207468726577",                                                                                                                     // ResponseAbort
	"0b0c000000026131010200000000000000060000000000000000200000ffffffffffffffff030000000000100000ffffffff",                                                                         // SqliteCommitFinalize
	"0502613102000000010101010001010101ffffffffffffffff",                                                                                                                           // KvListRange
}

var referenceToEnvoy = []string{
	"00983a00000000000040771b00000000000000400100000000",                     // Init
	"0607000000000301000000010201020200000000030000000100010500000000000000", // SqliteGetPagesOk
	"04010203040a0b0c0d00000002613101ffffffff04504f53540f2f616374696f6e2f696e633f783d31020c636f6e74656e742d74797065186170706c69636174696f6e2f6f637465742d73747265616d10782d72697665742d656e636f64696e6704626172650102dead0101", // RequestStart
	"0108086163746f722dc3a900286bee00000000000100000007636f756e7465720005000000000000000002010203040a0b0c0d090909090000000000086163746f722dc3a900286bee00000000000100000001630100ffffffffffffffff01000001000000086163746f722dc3a900286bee000000000001000000016301026b310068e5cf8b010000010568656c6c6f000102010102020306322e332e31390068e5cf8b010000000000ffffffffffffffff02010101070100086163746f722dc3a900286bee00000000000100000100086163746f722dc3a900286bee00000000000100000101086163746f722dc3a900286bee00000000000100000102086163746f722dc3a900286bee00000000000100000103086163746f722dc3a900286bee00000000000100000104", // Commands
	"0d12000000000202026964046e616d65030201ffffffffffffdfff030668c3a96c6c6f0200040200ff000300000000000000012a000000000000000000000000000000000000", // SqliteExecuteBatchOk
}

func checkDecodeError(t *testing.T, in []byte, err error) {
	t.Helper()
	var de *bare.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("%x: error %v (%T) is no *bare.DecodeError", in, err, err)
	}
	if de.Offset < 0 || de.Offset > len(in) {
		t.Fatalf("%x: error offset %d outside the input", in, de.Offset)
	}
}

func addSeeds[T any](f *testing.F, ref []string, all []T, enc func(T, int) ([]byte, error)) {
	for _, h := range ref {
		f.Add(unhex(f, h))
	}
	for _, m := range all {
		if b, err := enc(m, Version8); err == nil {
			f.Add(b)
		}
	}
}

func fuzzCanonical[T any](t *testing.T, in []byte, dec func([]byte, int) (T, error), enc func(T, int) ([]byte, error)) {
	m, err := dec(in, Version8)
	if err != nil {
		checkDecodeError(t, in, err)
		return
	}
	out, err := enc(m, Version8)
	if err != nil {
		t.Fatalf("decoded %x to %#v, which does not encode: %v", in, m, err)
	}
	if !bytes.Equal(out, in) {
		t.Fatalf("%x re-encodes to %x", in, out)
	}
}

func FuzzDecodeToRivet(f *testing.F) {
	addSeeds(f, referenceToRivet, allToRivet(), EncodeToRivet)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzCanonical(t, in, DecodeToRivet, EncodeToRivet) })
}

func FuzzDecodeToEnvoy(f *testing.F) {
	addSeeds(f, referenceToEnvoy, allToEnvoy(), EncodeToEnvoy)
	f.Fuzz(func(t *testing.T, in []byte) { fuzzCanonical(t, in, DecodeToEnvoy, EncodeToEnvoy) })
}

// FuzzDecodeInternal covers the engine-internal unions; the first byte picks which one decodes
// the rest.
func FuzzDecodeInternal(f *testing.F) {
	seed := func(sel byte, b []byte, err error) {
		if err != nil {
			f.Fatal(err)
		}
		f.Add(append([]byte{sel}, b...))
	}
	for _, m := range allToEnvoyConn() {
		b, err := EncodeToEnvoyConn(m, Version8)
		seed(0, b, err)
	}
	for _, m := range allToGateway() {
		b, err := EncodeToGateway(m, Version8)
		seed(1, b, err)
	}
	for _, m := range allToOutbound() {
		b, err := EncodeToOutbound(m, Version8)
		seed(2, b, err)
	}
	for _, c := range allCommands() {
		b, err := EncodeActorCommandKeyData(c.Inner, Version8)
		seed(3, b, err)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 {
			return
		}
		sel, in := in[0]%4, in[1:]
		switch sel {
		case 0:
			fuzzCanonical(t, in, DecodeToEnvoyConn, EncodeToEnvoyConn)
		case 1:
			fuzzCanonical(t, in, DecodeToGateway, EncodeToGateway)
		case 2:
			fuzzCanonical(t, in, DecodeToOutbound, EncodeToOutbound)
		case 3:
			fuzzCanonical(t, in, DecodeActorCommandKeyData, EncodeActorCommandKeyData)
		}
	})
}
