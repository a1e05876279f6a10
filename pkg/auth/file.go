package auth

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"
)

// MaxTokensFileSize bounds the tokens file berth reads.
const MaxTokensFileSize = 4 << 20

// TokenPrefix starts every token NewToken makes, so that a leaked one is easy to find.
const TokenPrefix = "berth_"

// File is the tokens file: scoped tokens, each kept as the SHA-256 of its secret.
type File struct {
	Tokens []Entry `json:"tokens"`
}

// Entry is one scoped token.
type Entry struct {
	// ID names the token (in logs, and to revoke it): 1 to 64 letters, digits, '-', '_', '.'.
	ID string `json:"id"`
	// Namespace is the one namespace the token reaches.
	Namespace string `json:"namespace"`
	Role      Role   `json:"role"`
	// SHA256 is the hex SHA-256 of the token.
	SHA256 string `json:"sha256"`
	// ExpiresAt, when set, ends the token.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// CreatedAt is informative.
	CreatedAt *time.Time `json:"created_at,omitempty"`
}

// NewToken returns a fresh random token: TokenPrefix and 256 random bits.
func NewToken() string {
	return TokenPrefix + base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// Hash returns the hex SHA-256 of token, as an Entry keeps it.
func Hash(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return b
}

// ReadFile reads and checks the tokens file at path. A missing file is an error.
func ReadFile(path string) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if n, err := buf.ReadFrom(io.LimitReader(f, MaxTokensFileSize+1)); err != nil {
		return File{}, fmt.Errorf("tokens file %s: %w", path, err)
	} else if n > MaxTokensFileSize {
		return File{}, fmt.Errorf("tokens file %s: over %d bytes", path, MaxTokensFileSize)
	}
	return ParseFile(buf.Bytes())
}

// ParseFile decodes and checks a tokens file: unknown fields, duplicate ids or hashes, bad
// roles and malformed hashes are errors naming the entry.
func ParseFile(data []byte) (File, error) {
	var out File
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		return File{}, fmt.Errorf("tokens file: %w", err)
	}
	if dec.More() {
		return File{}, fmt.Errorf("tokens file: data after the object")
	}
	if err := out.Check(); err != nil {
		return File{}, err
	}
	return out, nil
}

// Check returns an error naming the first bad entry of f: a malformed id, namespace, role or
// hash, or an id or token that appears twice.
func (f File) Check() error {
	ids := map[string]bool{}
	hashes := map[string]bool{}
	for i, e := range f.Tokens {
		where := fmt.Sprintf("tokens file: tokens[%d]", i)
		switch {
		case !validID(e.ID):
			return fmt.Errorf("%s: id %q: want 1 to 64 letters, digits, '-', '_' or '.'", where, e.ID)
		case ids[e.ID]:
			return fmt.Errorf("%s: id %q appears twice", where, e.ID)
		case e.Namespace == "" || strings.ContainsFunc(e.Namespace, notGraphic):
			return fmt.Errorf("%s (%s): namespace %q: want a namespace name", where, e.ID, e.Namespace)
		case !e.Role.Valid():
			return fmt.Errorf("%s (%s): role %q: want admin, read or runner", where, e.ID, e.Role)
		case !validHash(e.SHA256):
			return fmt.Errorf("%s (%s): sha256: want 64 lowercase hex digits", where, e.ID)
		case hashes[e.SHA256]:
			return fmt.Errorf("%s (%s): the same token as another entry", where, e.ID)
		}
		ids[e.ID], hashes[e.SHA256] = true, true
	}
	return nil
}

// WriteFile writes f to path atomically (a temporary file renamed over it), readable by its
// owner only.
func WriteFile(path string, f File) error {
	if f.Tokens == nil {
		f.Tokens = []Entry{}
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func validID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

func validHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func notGraphic(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }
