package bare

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func ptrTo[T any](v T) *T { return &v }

func TestOptional(t *testing.T) {
	tests := []struct {
		name string
		hex  string
		v    *uint16
	}{
		{"absent", "00", nil},
		{"present", "01 c800", ptrTo(uint16(200))},
		{"present zero", "01 0000", ptrTo(uint16(0))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w Writer
			WriteOptional(&w, tt.v, (*Writer).U16)
			if want := unhex(t, tt.hex); !bytes.Equal(w.Bytes(), want) {
				t.Fatalf("wrote %x, want %x", w.Bytes(), want)
			}
			r := NewReader(w.Bytes())
			got := ReadOptional(r, (*Reader).U16)
			if err := r.Done(); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.v) {
				t.Fatalf("read %v, want %v", got, tt.v)
			}
		})
	}
	// A bad tag or a truncated value gives nil and the error.
	for _, h := range []string{"02", "01 c8"} {
		r := NewReader(unhex(t, h))
		if got := ReadOptional(r, (*Reader).U16); got != nil || r.Err() == nil {
			t.Errorf("%s: read %v, err %v", h, got, r.Err())
		}
	}
	// A struct read by a schema function.
	type pair struct{ A, B string }
	readPair := func(r *Reader) pair { return pair{r.Str(), r.Str()} }
	r := NewReader(unhex(t, "01 0161 00"))
	if got := ReadOptional(r, readPair); got == nil || *got != (pair{"a", ""}) || r.Done() != nil {
		t.Errorf("pair: %v, %v", got, r.Err())
	}
}

func TestOptData(t *testing.T) {
	for _, tt := range []struct {
		hex string
		v   []byte
	}{
		{"00", nil},
		{"01 00", []byte{}},
		{"01 02 abcd", []byte{0xab, 0xcd}},
	} {
		var w Writer
		w.OptData(tt.v)
		if want := unhex(t, tt.hex); !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("%v: wrote %x, want %x", tt.v, w.Bytes(), want)
		}
		r := NewReader(w.Bytes())
		got := r.OptData()
		if err := r.Done(); err != nil {
			t.Fatal(err)
		}
		if (got == nil) != (tt.v == nil) || !bytes.Equal(got, tt.v) {
			t.Fatalf("%s: read %#v, want %#v", tt.hex, got, tt.v)
		}
	}
}

func TestFixedDataInto(t *testing.T) {
	var id [4]byte
	r := NewReader(unhex(t, "01020304 05"))
	r.FixedDataInto(id[:])
	if id != [4]byte{1, 2, 3, 4} || r.Offset() != 4 {
		t.Fatalf("read %x, offset %d", id, r.Offset())
	}
	r.FixedDataInto(id[:])
	var de *DecodeError
	if !errors.As(r.Err(), &de) || de.Offset != 4 {
		t.Fatalf("truncated: %v", r.Err())
	}
	if id != [4]byte{1, 2, 3, 4} {
		t.Fatalf("dst changed after an error: %x", id)
	}
}

func TestList(t *testing.T) {
	for _, tt := range []struct {
		hex string
		v   []uint32
	}{
		{"00", []uint32{}},
		{"02 01000000 ffffffff", []uint32{1, 0xffffffff}},
	} {
		var w Writer
		WriteList(&w, tt.v, (*Writer).U32)
		if want := unhex(t, tt.hex); !bytes.Equal(w.Bytes(), want) {
			t.Fatalf("wrote %x, want %x", w.Bytes(), want)
		}
		r := NewReader(w.Bytes())
		got := ReadList(r, (*Reader).U32)
		if err := r.Done(); err != nil {
			t.Fatal(err)
		}
		if got == nil || !reflect.DeepEqual(got, tt.v) {
			t.Fatalf("read %#v, want %#v", got, tt.v)
		}
	}
	// A count beyond the input fails before allocating; a truncated item stops the loop.
	for _, tt := range []struct {
		hex string
		off int
	}{
		{"ffffffff0f 00", 0},
		{"03 01000000 02", 5},
	} {
		r := NewReader(unhex(t, tt.hex))
		calls := 0
		ReadList(r, func(r *Reader) uint32 { calls++; return r.U32() })
		var de *DecodeError
		if !errors.As(r.Err(), &de) || de.Offset != tt.off {
			t.Errorf("%s: error %v, want at %d", tt.hex, r.Err(), tt.off)
		}
		if calls > 2 {
			t.Errorf("%s: read %d items after the error", tt.hex, calls)
		}
	}
	// Nested lists (rows of columns).
	var w Writer
	rows := [][]string{{"a"}, {}, {"b", "c"}}
	WriteList(&w, rows, func(w *Writer, row []string) { WriteList(w, row, (*Writer).String) })
	r := NewReader(w.Bytes())
	got := ReadList(r, func(r *Reader) []string { return ReadList(r, (*Reader).Str) })
	if r.Done() != nil || !reflect.DeepEqual(got, rows) {
		t.Fatalf("nested: %#v, %v", got, r.Err())
	}
}
