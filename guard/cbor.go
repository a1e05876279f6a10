package guard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf8"
)

// maxCBORDepth bounds the nesting of arrays, maps and tags, as ciborium's recursion limit.
const maxCBORDepth = 256

var errCBORTruncated = errors.New("unexpected end of input")

// validCBOR reports whether b is exactly one well-formed CBOR data item (RFC 8949 §3 and
// Appendix C) whose text strings are valid UTF-8, nested at most maxCBORDepth deep. It
// allocates nothing in proportion to lengths the input claims.
func validCBOR(b []byte) error {
	if len(b) == 0 {
		return errCBORTruncated
	}
	d := cborDecoder{b: b}
	brk, err := d.item(0)
	if err != nil {
		return err
	}
	if brk {
		return errors.New("unexpected break (0xff) outside an indefinite-length item")
	}
	if d.off != len(b) {
		return fmt.Errorf("%d bytes after the data item", len(b)-d.off)
	}
	return nil
}

type cborDecoder struct {
	b   []byte
	off int
}

// head reads an initial byte and its argument. For additional info 31 (indefinite length or
// break) indef is true.
func (d *cborDecoder) head() (major byte, ai byte, arg uint64, indef bool, err error) {
	if d.off >= len(d.b) {
		return 0, 0, 0, false, errCBORTruncated
	}
	ib := d.b[d.off]
	d.off++
	major, ai = ib>>5, ib&0x1f
	switch {
	case ai < 24:
		return major, ai, uint64(ai), false, nil
	case ai <= 27:
		n := 1 << (ai - 24)
		if len(d.b)-d.off < n {
			return 0, 0, 0, false, errCBORTruncated
		}
		p := d.b[d.off : d.off+n]
		d.off += n
		switch n {
		case 1:
			arg = uint64(p[0])
		case 2:
			arg = uint64(binary.BigEndian.Uint16(p))
		case 4:
			arg = uint64(binary.BigEndian.Uint32(p))
		default:
			arg = binary.BigEndian.Uint64(p)
		}
		return major, ai, arg, false, nil
	case ai == 31:
		return major, ai, 0, true, nil
	default:
		return 0, 0, 0, false, fmt.Errorf("reserved additional information %d", ai)
	}
}

// item checks one data item; brk is true when it was a break stop code instead.
func (d *cborDecoder) item(depth int) (brk bool, err error) {
	if depth > maxCBORDepth {
		return false, fmt.Errorf("nested deeper than %d", maxCBORDepth)
	}
	major, ai, arg, indef, err := d.head()
	if err != nil {
		return false, err
	}
	switch major {
	case 0, 1: // unsigned and negative integers
		if indef {
			return false, fmt.Errorf("indefinite length on major type %d", major)
		}
		return false, nil
	case 2, 3: // byte and text strings
		if !indef {
			return false, d.str(major, arg)
		}
		for {
			cm, _, carg, cindef, err := d.head()
			if err != nil {
				return false, err
			}
			if cm == 7 && cindef {
				return false, nil // break
			}
			if cm != major || cindef {
				return false, errors.New("an indefinite-length string chunk of the wrong type")
			}
			if err := d.str(major, carg); err != nil {
				return false, err
			}
		}
	case 4, 5: // arrays and maps
		per := uint64(1)
		if major == 5 {
			per = 2
		}
		if indef {
			for n := uint64(0); ; n++ {
				brk, err := d.item(depth + 1)
				if err != nil {
					return false, err
				}
				if brk {
					if n%per != 0 {
						return false, errors.New("a map with a key and no value")
					}
					return false, nil
				}
			}
		}
		// Every item takes at least one byte: a count beyond the input is truncated.
		if arg > uint64(len(d.b)-d.off) || arg*per > uint64(len(d.b)-d.off) {
			return false, errCBORTruncated
		}
		for range arg * per {
			brk, err := d.item(depth + 1)
			if err != nil {
				return false, err
			}
			if brk {
				return false, errors.New("unexpected break in a definite-length item")
			}
		}
		return false, nil
	case 6: // tags
		if indef {
			return false, errors.New("indefinite length on a tag")
		}
		brk, err := d.item(depth + 1)
		if err != nil {
			return false, err
		}
		if brk {
			return false, errors.New("a tag with no content")
		}
		return false, nil
	default: // 7: simple values, floats, break
		switch {
		case indef:
			return true, nil
		case ai == 24 && arg < 32:
			return false, fmt.Errorf("simple value %d in two bytes", arg)
		}
		return false, nil
	}
}

func (d *cborDecoder) str(major byte, n uint64) error {
	if n > uint64(len(d.b)-d.off) {
		return errCBORTruncated
	}
	s := d.b[d.off : d.off+int(n)]
	d.off += int(n)
	if major == 3 && !utf8.Valid(s) {
		return errors.New("a text string that is not UTF-8")
	}
	return nil
}
