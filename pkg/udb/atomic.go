package udb

import "bytes"

// ApplyAtomic computes the result of an atomic operation on a stored value,
// with FoundationDB's semantics (fdbclient/Atomic.h): integer operands are
// unsigned little-endian of the parameter's length, the existing value is
// truncated or zero-extended to that length, and "absent" (present false)
// differs from "empty" for some operations. It returns the new value and
// whether the key is present afterwards. The versionstamp operations are not
// handled here: they are rewritten into sets at commit.
func ApplyAtomic(op MutationType, existing []byte, present bool, param []byte) ([]byte, bool) {
	switch op {
	case MutationAdd:
		if !present || len(existing) == 0 || len(param) == 0 {
			return clone(param), true
		}
		out := make([]byte, len(param))
		carry := 0
		for i := range param {
			s := int(param[i]) + int(byteAt(existing, i)) + carry
			out[i], carry = byte(s), s>>8
		}
		return out, true
	case MutationBitAnd:
		if !present {
			return clone(param), true
		}
		out := make([]byte, len(param))
		for i := range param {
			out[i] = param[i] & byteAt(existing, i)
		}
		return out, true
	case MutationBitOr, MutationBitXor:
		if !present || len(existing) == 0 {
			return clone(param), true
		}
		out := make([]byte, len(param))
		for i := range param {
			if op == MutationBitOr {
				out[i] = param[i] | byteAt(existing, i)
			} else {
				out[i] = param[i] ^ byteAt(existing, i)
			}
		}
		return out, true
	case MutationMax, MutationMin:
		if !present || (op == MutationMax && len(existing) == 0) {
			return clone(param), true
		}
		c := compareLE(param, existing)
		if (op == MutationMax && c >= 0) || (op == MutationMin && c <= 0) {
			return clone(param), true
		}
		return resize(existing, len(param)), true
	case MutationByteMin, MutationByteMax:
		if !present {
			return clone(param), true
		}
		c := bytes.Compare(existing, param)
		if (op == MutationByteMin && c < 0) || (op == MutationByteMax && c > 0) {
			return clone(existing), true
		}
		return clone(param), true
	case MutationAppendIfFits:
		if !present || len(existing) == 0 {
			return clone(param), true
		}
		if len(existing)+len(param) > MaxValueSize {
			return clone(existing), true
		}
		return append(clone(existing), param...), true
	case MutationCompareAndClear:
		if !present || bytes.Equal(existing, param) {
			return nil, false
		}
		return clone(existing), true
	}
	return clone(existing), present
}

// IsAtomicOp reports whether op is an operation ApplyAtomic handles.
func IsAtomicOp(op MutationType) bool {
	switch op {
	case MutationAdd, MutationBitAnd, MutationBitOr, MutationBitXor, MutationAppendIfFits,
		MutationMax, MutationMin, MutationByteMin, MutationByteMax, MutationCompareAndClear:
		return true
	}
	return false
}

func byteAt(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// compareLE compares param with existing as unsigned little-endian integers
// of len(param) bytes.
func compareLE(param, existing []byte) int {
	for i := len(param) - 1; i >= 0; i-- {
		a, b := param[i], byteAt(existing, i)
		if a != b {
			if a > b {
				return 1
			}
			return -1
		}
	}
	return 0
}

func resize(b []byte, n int) []byte {
	out := make([]byte, n)
	copy(out, b)
	return out
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append([]byte{}, b...)
}
