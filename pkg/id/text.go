package id

// String returns the 30-character lowercase base36 form of id.
func (id ID) String() string {
	var buf [StringLen]byte
	id.appendBase36(buf[:0])
	return string(buf[:])
}

// AppendText appends the string form of id to b. It never fails.
func (id ID) AppendText(b []byte) ([]byte, error) {
	return id.appendBase36(b), nil
}

// MarshalText returns the string form of id, so JSON holds ids as strings.
// It never fails, even for the zero ID (which UnmarshalText rejects).
func (id ID) MarshalText() ([]byte, error) {
	return id.appendBase36(make([]byte, 0, StringLen)), nil
}

// UnmarshalText parses text as [Parse] does. On error id is unchanged.
func (id *ID) UnmarshalText(text []byte) error {
	v, err := Parse(string(text))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

const digits = "0123456789abcdefghijklmnopqrstuvwxyz"

// appendBase36 appends the 30 base36 digits of id, least significant first.
// The 19 bytes are one little-endian number, held here as five 32-bit limbs
// and divided by 36^6 per round: each remainder gives six digits.
func (id ID) appendBase36(b []byte) []byte {
	const chunk = 36 * 36 * 36 * 36 * 36 * 36 // 36^6 < 2^32
	var limbs [5]uint64                       // little-endian, 32 bits each
	for i, v := range id {
		limbs[i/4] |= uint64(v) << (8 * (i % 4))
	}
	for range StringLen / 6 {
		var rem uint64
		for j := len(limbs) - 1; j >= 0; j-- {
			cur := rem<<32 | limbs[j]
			limbs[j], rem = cur/chunk, cur%chunk
		}
		for range 6 {
			b = append(b, digits[rem%36])
			rem /= 36
		}
	}
	return b
}

// Parse parses the 30-character base36 form of an ID. Upper-case letters are
// accepted. Errors are *ParseError values wrapping one of ErrLength,
// ErrCharacter, ErrOverflow or ErrVersion, checked in that order.
func Parse(s string) (ID, error) {
	if len(s) != StringLen {
		if len(s) == 36 && s[8] == '-' {
			return ID{}, stringError(s, ErrLength, "got a %d-character UUID; version 0 (UUID) ids are not supported, want %d base36 characters", len(s), StringLen)
		}
		return ID{}, stringError(s, ErrLength, "got %d characters, want %d", len(s), StringLen)
	}
	var vals [StringLen]byte
	for i := range len(s) {
		c := s[i]
		switch {
		case '0' <= c && c <= '9':
			vals[i] = c - '0'
		case 'a' <= c && c <= 'z':
			vals[i] = c - 'a' + 10
		case 'A' <= c && c <= 'Z':
			vals[i] = c - 'A' + 10
		default:
			return ID{}, badCharError(s, i)
		}
	}
	// Horner's rule from the most significant digit (the last character),
	// on a little-endian byte array.
	var id ID
	for i := StringLen - 1; i >= 0; i-- {
		carry := uint32(vals[i])
		for j := range Size {
			v := uint32(id[j])*36 + carry
			id[j] = byte(v)
			carry = v >> 8
		}
		if carry != 0 {
			return ID{}, stringError(s, ErrOverflow, "the value does not fit in %d bytes", Size)
		}
	}
	if id[0] != Version {
		return ID{}, stringError(s, ErrVersion, "version byte is %d, want %d", id[0], Version)
	}
	return id, nil
}

// MustParse is like Parse but panics on error. It is for ids written as
// constants in programs and tests, never for input.
func MustParse(s string) ID {
	id, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return id
}
