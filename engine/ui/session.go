package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
)

// Session defaults (see Options).
const (
	DefaultSessionLifetime = 12 * time.Hour
	DefaultMaxSessions     = 1024
)

// idLen is a session id's length in bytes.
const idLen = 32

// session is one logged-in browser: the admin token it proved, kept server side so that
// /ui/api/ can call the API with it, and when it ends.
type session struct {
	token   string
	expires time.Time
}

// sessions is the server-side session table. A cookie is "<id>.<mac>", both unpadded
// base64url, where mac is HMAC-SHA256 of the id under a key made at start: a forged or
// guessed cookie fails on the MAC before any lookup, and since the key and the table live in
// this process only, every session ends when it restarts.
type sessions struct {
	key      [32]byte
	table    *lru.Cache[string, session] // by raw id; least recently used evicted beyond the bound
	lifetime time.Duration
	now      func() time.Time
}

func newSessions(lifetime time.Duration, max int, now func() time.Time) *sessions {
	if lifetime <= 0 {
		lifetime = DefaultSessionLifetime
	}
	if max <= 0 {
		max = DefaultMaxSessions
	}
	if now == nil {
		now = time.Now
	}
	s := &sessions{lifetime: lifetime, now: now}
	s.table, _ = lru.New[string, session](max) // fails only for max <= 0
	_, _ = rand.Read(s.key[:])                 // crypto/rand.Read never fails (Go 1.24+)
	return s
}

// create starts a session for token and returns its cookie value.
func (s *sessions) create(token string) string {
	id := make([]byte, idLen)
	_, _ = rand.Read(id)
	s.table.Add(string(id), session{token: token, expires: s.now().Add(s.lifetime)})
	return base64.RawURLEncoding.EncodeToString(id) + "." + base64.RawURLEncoding.EncodeToString(s.mac(id))
}

// lookup returns the live session a cookie value names. A value with a bad signature is
// refused without touching the table; an expired session is removed.
func (s *sessions) lookup(value string) (session, bool) {
	id, ok := s.verify(value)
	if !ok {
		return session{}, false
	}
	ses, ok := s.table.Get(string(id))
	if !ok {
		return session{}, false
	}
	if !s.now().Before(ses.expires) {
		s.table.Remove(string(id))
		return session{}, false
	}
	return ses, true
}

// remove ends the session a cookie value names, if the value is genuine.
func (s *sessions) remove(value string) {
	if id, ok := s.verify(value); ok {
		s.table.Remove(string(id))
	}
}

// verify checks a cookie value's MAC and returns its session id.
func (s *sessions) verify(value string) ([]byte, bool) {
	encID, encMAC, ok := strings.Cut(value, ".")
	if !ok {
		return nil, false
	}
	id, err := base64.RawURLEncoding.DecodeString(encID)
	if err != nil || len(id) != idLen {
		return nil, false
	}
	mac, err := base64.RawURLEncoding.DecodeString(encMAC)
	if err != nil || !hmac.Equal(mac, s.mac(id)) {
		return nil, false
	}
	return id, true
}

func (s *sessions) mac(id []byte) []byte {
	h := hmac.New(sha256.New, s.key[:])
	h.Write(id)
	return h.Sum(nil)
}
