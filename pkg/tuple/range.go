package tuple

import "errors"

// ErrStrincAllFF is returned by [Strinc] for a key that is empty or made only
// of 0xFF bytes: no key sorts after all keys it prefixes.
var ErrStrincAllFF = errors.New("tuple: Strinc: key must contain at least one byte other than 0xFF")

// FDBRangeKeys returns the range [Pack(t)+0x00, Pack(t)+0xFF), which holds
// the keys of every tuple that extends t by at least one element, and not
// the key Pack(t) itself. Both keys share one allocation, with capacities
// clipped so that appending to one never overwrites the other. It panics in
// the same cases as [Tuple.Pack].
func (t Tuple) FDBRangeKeys() (begin, end []byte) {
	n, _, err := t.measure(false)
	if err != nil {
		panic(err)
	}
	buf := make([]byte, 0, 2*n+2)
	buf = t.appendTo(buf, false, nil)
	buf = append(buf, 0x00)
	buf = append(buf, buf[:n]...)
	buf = append(buf, 0xff)
	return buf[: n+1 : n+1], buf[n+1:]
}

// Strinc returns the first key that does not have prefix as a prefix: prefix
// with its trailing 0xFF bytes removed and its last remaining byte
// incremented. The result is a new slice. It returns ErrStrincAllFF if prefix
// is empty or all 0xFF.
func Strinc(prefix []byte) ([]byte, error) {
	n := len(prefix)
	for n > 0 && prefix[n-1] == 0xff {
		n--
	}
	if n == 0 {
		return nil, ErrStrincAllFF
	}
	out := make([]byte, n)
	copy(out, prefix[:n])
	out[n-1]++
	return out, nil
}
