package cursor

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"strconv"
	"strings"

	"github.com/berthhq/berth/pkg/rerr"
)

// Field is the input field that carries a cursor; errors name it.
const Field = "cursor"

// MaxLen bounds a cursor's text, so a hostile one costs nothing to refuse.
// The longest berth writes carries a 128-byte envoy key: under 200 characters.
const MaxLen = 1024

// version is the first byte of every encoded cursor. Base64 of a byte below
// 0x04 starts with 'A', so an encoded cursor never parses as a decimal
// number and the two forms cannot be confused.
const version = 1

// Position is the place a page ended: lists are ordered by (create_ts, tie)
// descending, where tie is the id's 19 bytes (runners) or the envoy key's
// UTF-8 (envoys), compared as bytes. The next page holds the items strictly
// after the position in that order.
type Position struct {
	CreateTs int64
	// Tie is nil for a legacy cursor.
	Tie []byte
	// Legacy marks the Rivet engine's bare decimal create_ts: the next page
	// starts at the items created strictly before CreateTs, skipping any
	// left in that millisecond.
	Legacy bool
}

// Encode returns the opaque cursor naming the item (createTs, tie).
func Encode(createTs int64, tie []byte) string {
	b := make([]byte, 0, 9+len(tie))
	b = append(b, version)
	b = binary.BigEndian.AppendUint64(b, uint64(createTs))
	b = append(b, tie...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Decode parses a cursor written by Encode, or a bare decimal create_ts.
// Errors are api.bad_request naming the cursor field.
func Decode(s string) (Position, error) {
	switch {
	case s == "":
		return Position{}, rerr.BadRequest(Field, "empty cursor")
	case len(s) > MaxLen:
		return Position{}, rerr.BadRequest(Field, "cursor longer than "+strconv.Itoa(MaxLen)+" characters")
	}
	if isDecimal(s) {
		ts, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return Position{}, rerr.BadRequest(Field, "create_ts cursor out of range")
		}
		return Position{CreateTs: ts, Legacy: true}, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	switch {
	case err != nil || strings.ContainsAny(s, "\r\n"): // the decoder skips line breaks
		return Position{}, rerr.BadRequest(Field, "malformed cursor")
	case len(b) < 9 || b[0] != version:
		return Position{}, rerr.BadRequest(Field, "not a cursor returned by this list")
	}
	return Position{CreateTs: int64(binary.BigEndian.Uint64(b[1:9])), Tie: b[9:]}, nil
}

// DecodeFor parses a list's cursor parameter: nil when absent, else the
// position, whose tie (unless a legacy create_ts cursor) must satisfy
// tieOK, the shape of the list's tie-breaker.
func DecodeFor(s string, tieOK func(tie []byte) bool) (*Position, error) {
	if s == "" {
		return nil, nil
	}
	p, err := Decode(s)
	if err != nil {
		return nil, err
	}
	if !p.Legacy && !tieOK(p.Tie) {
		return nil, rerr.BadRequest(Field, "not a cursor returned by this list")
	}
	return &p, nil
}

// isDecimal reports whether s is an optional '-' followed by ASCII digits.
func isDecimal(s string) bool {
	if s[0] == '-' {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// After reports whether the item (createTs, tie) comes strictly after p in
// list order, (create_ts, tie) descending, so that it belongs to the pages
// that follow p. Lists that filter in memory (by ids or keys) page with it;
// index scans select the same items with the keys' ranges
// (CreateTsRange.Before, BeforeTs).
func (p Position) After(createTs int64, tie []byte) bool {
	if p.Legacy || createTs != p.CreateTs {
		return createTs < p.CreateTs
	}
	return bytes.Compare(tie, p.Tie) < 0
}

// Compare orders two items as lists return them, (create_ts, tie)
// descending: negative when a comes first.
func Compare(aTs int64, aTie []byte, bTs int64, bTie []byte) int {
	switch {
	case aTs > bTs:
		return -1
	case aTs < bTs:
		return 1
	}
	return -bytes.Compare(aTie, bTie)
}
