package bare

import "fmt"

// DecodeError describes malformed BARE input. Every error a Reader reports is a *DecodeError.
type DecodeError struct {
	// Offset is the position in the input where the offending value starts (for trailing
	// bytes, where they start). It is at most the input length.
	Offset int
	// Msg says what is wrong.
	Msg string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("bare: %s at offset %d", e.Msg, e.Offset)
}

// EncodeError describes a value a Writer cannot encode (a negative length, a NaN float).
type EncodeError struct {
	// Offset is the length of the output when the bad value was written.
	Offset int
	// Msg says what is wrong.
	Msg string
}

func (e *EncodeError) Error() string {
	return fmt.Sprintf("bare: cannot encode: %s at offset %d", e.Msg, e.Offset)
}
