package tuple

import (
	"fmt"
	"sync/atomic"
)

// The tuple layer reserves type codes 0x40–0x4f for application-defined types.
// An application registers a code with [RegisterUserType] and gives its Go type
// a [UserType] method set; unregistered codes stay decode errors.
const (
	MinUserTypeCode = 0x40
	MaxUserTypeCode = 0x4f
)

// UserType is implemented by element values that pack as an application type:
// the type code then a fixed-size payload, with no terminator or escaping. The
// code must be registered with [RegisterUserType], which fixes the payload size.
//
// Such elements sort by code among the other types (after versionstamps, 0x33)
// and, within one code, by payload bytes.
type UserType interface {
	// TupleUserCode returns the element's type code, in 0x40–0x4f.
	TupleUserCode() byte
	// AppendTupleBytes appends the payload to dst: exactly the number of
	// bytes registered for the code.
	AppendTupleBytes(dst []byte) []byte
}

type userType struct {
	size   int
	decode func([]byte) (any, error)
}

var userTypes [MaxUserTypeCode - MinUserTypeCode + 1]atomic.Pointer[userType]

// RegisterUserType makes Unpack decode type code code: it takes the next size
// bytes and passes them to decode, whose result becomes the element. decode
// must not keep the slice (it aliases the input), must return a value that
// implements [UserType] with the same code (so that Pack(Unpack(k)) == k;
// Unpack reports any other result as a decode error), and its errors become
// *DecodeError values that wrap them.
//
// Call it from an init function. It panics if code is outside 0x40–0x4f, size
// is negative, decode is nil, or the code is already registered: those are
// build mistakes, not input errors.
func RegisterUserType(code byte, size int, decode func(payload []byte) (any, error)) {
	if code < MinUserTypeCode || code > MaxUserTypeCode {
		panic(fmt.Sprintf("tuple: RegisterUserType: code 0x%02x is outside the user range 0x40-0x4f", code))
	}
	if size < 0 || decode == nil {
		panic(fmt.Sprintf("tuple: RegisterUserType(0x%02x): size must be >= 0 and decode non-nil", code))
	}
	if !userTypes[code-MinUserTypeCode].CompareAndSwap(nil, &userType{size: size, decode: decode}) {
		panic(fmt.Sprintf("tuple: RegisterUserType: code 0x%02x is already registered", code))
	}
}

// lookupUserType returns the registration of code, or nil.
func lookupUserType(code byte) *userType {
	if code < MinUserTypeCode || code > MaxUserTypeCode {
		return nil
	}
	return userTypes[code-MinUserTypeCode].Load()
}

func measureUser(v UserType) (int, error) {
	code := v.TupleUserCode()
	ut := lookupUserType(code)
	if ut == nil {
		return 0, fmt.Errorf("%w %T: user type code 0x%02x is not registered", ErrUnsupportedType, v, code)
	}
	return 1 + ut.size, nil
}

// appendUser appends v, which has passed measureUser.
func appendUser(b []byte, v UserType) []byte {
	code := v.TupleUserCode()
	b = append(b, code)
	start := len(b)
	b = v.AppendTupleBytes(b)
	if size := lookupUserType(code).size; len(b)-start != size {
		// A broken UserType implementation: a programming error, like an
		// unsupported element type.
		panic(fmt.Sprintf("tuple: %T.AppendTupleBytes wrote %d bytes; code 0x%02x is registered with %d", v, len(b)-start, code, size))
	}
	return b
}

// decodeUser decodes the user-type element at b[i], or returns ok false if its
// code is not registered.
func decodeUser(b []byte, i int) (e any, next int, ok bool, err error) {
	code := b[i]
	ut := lookupUserType(code)
	if ut == nil {
		return nil, 0, false, nil
	}
	if len(b)-i-1 < ut.size {
		return nil, 0, true, decodeErr(i, "truncated user type 0x%02x: need %d bytes, have %d", code, ut.size, len(b)-i-1)
	}
	end := i + 1 + ut.size
	v, err := ut.decode(b[i+1 : end : end])
	if err != nil {
		return nil, 0, true, &DecodeError{Offset: i, Msg: fmt.Sprintf("user type 0x%02x: %v", code, err), Err: err}
	}
	if u, isUser := v.(UserType); !isUser || u.TupleUserCode() != code {
		return nil, 0, true, decodeErr(i, "user type 0x%02x: decoder returned %T, not a UserType of that code", code, v)
	}
	return v, end, true, nil
}
