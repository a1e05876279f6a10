package harness

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
)

// Pattern returns a reader of n bytes of byte((i·31) mod 251), made as they are read: a large
// request body that no test holds in memory. The npm test actors check uploads by their
// SHA-256 (PatternSHA256).
func Pattern(n int64) io.Reader { return &pattern{n: n} }

type pattern struct{ off, n int64 }

func (p *pattern) Read(b []byte) (int, error) {
	if p.off >= p.n {
		return 0, io.EOF
	}
	b = b[:min(int64(len(b)), p.n-p.off)]
	for i := range b {
		b[i] = byte((p.off + int64(i)) * 31 % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

// PatternSHA256 is the hex SHA-256 of Pattern(n)'s bytes.
func PatternSHA256(n int64) string {
	h := sha256.New()
	_, _ = io.Copy(h, Pattern(n))
	return hex.EncodeToString(h.Sum(nil))
}
