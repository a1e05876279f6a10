package guard

import (
	"fmt"

	"github.com/fxamacker/cbor/v2"
)

// maxCBORDepth bounds the nesting of arrays, maps and tags, as ciborium's recursion limit.
const maxCBORDepth = 256

// Counts and lengths in rvt-input are bounded by the input, which a query string bounds;
// neither check allocates for what the input claims.
const cborMaxCount = 2147483647

var (
	// cborWellformed checks RFC 8949 well-formedness and the nesting depth.
	cborWellformed = mustDecMode(cbor.DecOptions{MaxNestedLevels: maxCBORDepth, MaxArrayElements: cborMaxCount, MaxMapPairs: cborMaxCount})
	// cborText checks what well-formedness does not: text strings (each chunk of an
	// indefinite one too) are UTF-8, as ciborium's decoding of rvt-input requires.
	cborText = mustDiagMode(cbor.DiagOptions{MaxNestedLevels: maxCBORDepth, MaxArrayElements: cborMaxCount, MaxMapPairs: cborMaxCount})
)

// validCBOR reports whether b is exactly one well-formed CBOR data item whose text strings
// are UTF-8, nested at most maxCBORDepth deep.
func validCBOR(b []byte) error {
	if err := cborWellformed.Wellformed(b); err != nil {
		return err
	}
	_, rest, err := cborText.DiagnoseFirst(b)
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("%d bytes after the data item", len(rest))
	}
	return err
}

func mustDecMode(o cbor.DecOptions) cbor.DecMode {
	m, err := o.DecMode()
	if err != nil {
		panic(err) // the options are constants
	}
	return m
}

func mustDiagMode(o cbor.DiagOptions) cbor.DiagMode {
	m, err := o.DiagMode()
	if err != nil {
		panic(err) // the options are constants
	}
	return m
}
