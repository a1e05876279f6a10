package runner

import (
	"bytes"
	"testing"
)

// Each fuzz input is a frame and a version selector (5 + v%3). Decoding must never panic, and a
// frame that decodes must re-encode to the same bytes at the same version.

var referenceToServer = []string{
	"00046563686f010000000a0000000101046563686f027b7d010e7b2270726f6265223a747275657d",
	"040068e5cf8b010000",
	"01010261310000000000000000000000000100",
	"010102613100000000010000000000000001010000",
	"06010203040a0b0c0d000000c800010e636f6e74656e742d6c656e677468013201026f6b00",
	"05026131000000000201016b010176",
	"03",
}

var referenceToClient = []string{
	"00027231983a00000000000040771b000000000000",
	"050068e5cf8b010000",
	"010102613100000000000000000000000000046563686f01026b310068e5cf8b010000010568656c6c6f00",
	"010102613100000000010000000000000001",
	"0201026131000000000100000000000000",
	"04010203040a0b0c0d00000002613103474554062f783f793d310104686f737401680000",
	"030000000003",
}

func FuzzDecodeToServer(f *testing.F) {
	for _, h := range referenceToServer {
		f.Add(unhex(f, h), uint8(2))
	}
	for _, m := range allToServer() {
		if b, err := EncodeToServer(m, Version7); err == nil {
			f.Add(b, uint8(2))
		}
		if b, err := EncodeToServer(m, Version5); err == nil {
			f.Add(b, uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, sel uint8) {
		v := MinVersion + int(sel%3)
		m, err := DecodeToServer(in, v)
		if err != nil {
			return
		}
		out, err := EncodeToServer(m, v)
		if err != nil {
			t.Fatalf("v%d: decoded %x to %#v, which does not encode: %v", v, in, m, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("v%d: %x re-encodes to %x", v, in, out)
		}
	})
}

func FuzzDecodeToClient(f *testing.F) {
	for _, h := range referenceToClient {
		f.Add(unhex(f, h), uint8(2))
	}
	for _, m := range allToClient() {
		for sel, v := range []int{Version5, Version6, Version7} {
			if b, err := EncodeToClient(m, v); err == nil {
				f.Add(b, uint8(sel))
			}
		}
	}
	f.Fuzz(func(t *testing.T, in []byte, sel uint8) {
		v := MinVersion + int(sel%3)
		m, err := DecodeToClient(in, v)
		if err != nil {
			return
		}
		out, err := EncodeToClient(m, v)
		if err != nil {
			t.Fatalf("v%d: decoded %x to %#v, which does not encode: %v", v, in, m, err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("v%d: %x re-encodes to %x", v, in, out)
		}
	})
}
