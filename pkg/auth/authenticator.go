package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/berthhq/berth/pkg/rerr"
)

// recheck is how often at most the tokens file's modification time is looked at.
const recheck = time.Second

// Options configures New.
type Options struct {
	// AdminToken, when set, turns auth on: it grants Everything. Empty means auth is off and
	// every request is granted Everything.
	AdminToken string
	// TokensFile, when set, is the path of the scoped tokens (see File). It is read again
	// when it changes, so tokens are added and revoked without a restart; a change that does
	// not parse is logged and the previous tokens stay in force.
	TokensFile string
	// Log receives reloads and failed reloads. Nil means slog.Default().
	Log *slog.Logger

	now func() time.Time // tests
}

// Authenticator turns tokens into grants. The zero of *Authenticator (nil) has auth off. It
// is safe for concurrent use.
type Authenticator struct {
	o     Options
	admin [sha256.Size]byte

	table     atomic.Pointer[table]
	checkedAt atomic.Int64 // unix nanoseconds of the last look at the file
	reloading sync.Mutex
}

// table is one reading of the tokens file.
type table struct {
	byHash map[[sha256.Size]byte]Entry
	stamp  fileStamp
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// New returns the authenticator of o; an unreadable or invalid tokens file is an error.
func New(o Options) (*Authenticator, error) {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.now == nil {
		o.now = time.Now
	}
	a := &Authenticator{o: o, admin: sha256.Sum256([]byte(o.AdminToken))}
	a.table.Store(&table{})
	if o.TokensFile != "" {
		if err := a.reload(); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// Admin returns the authenticator of the admin token alone ("" for auth off).
func Admin(token string) *Authenticator {
	a, _ := New(Options{AdminToken: token}) // without a tokens file, New cannot fail
	return a
}

// Enabled reports whether requests need a token.
func (a *Authenticator) Enabled() bool { return a != nil && a.o.AdminToken != "" }

// Authenticate returns the grant of token: Everything for the admin token (and for any
// request when auth is off), the entry's grant for an unexpired scoped token. A missing
// token is api.unauthorized, any other api.forbidden.
func (a *Authenticator) Authenticate(token string) (Grant, *rerr.Error) {
	if !a.Enabled() {
		return Everything, nil
	}
	if token == "" {
		return Grant{}, rerr.APIUnauthorized()
	}
	h := sha256.Sum256([]byte(token))
	if subtle.ConstantTimeCompare(h[:], a.admin[:]) == 1 {
		return Everything, nil
	}
	if a.o.TokensFile == "" {
		return Grant{}, rerr.APIForbidden()
	}
	a.maybeReload()
	e, ok := a.table.Load().byHash[h]
	if !ok || e.ExpiresAt != nil && !a.o.now().Before(*e.ExpiresAt) {
		return Grant{}, rerr.APIForbidden()
	}
	return Grant{Role: e.Role, Namespace: e.Namespace, TokenID: e.ID}, nil
}

// AdminToken is the token this engine presents to other nodes and datacenters.
func (a *Authenticator) AdminToken() string {
	if a == nil {
		return ""
	}
	return a.o.AdminToken
}

// Tokens returns how many scoped tokens are in force (expired ones included).
func (a *Authenticator) Tokens() int {
	if a == nil {
		return 0
	}
	return len(a.table.Load().byHash)
}

// maybeReload reads the tokens file again if it changed, looking at most once per recheck;
// one caller reloads while the others go on with the current table.
func (a *Authenticator) maybeReload() {
	now := a.o.now().UnixNano()
	last := a.checkedAt.Load()
	if now-last < int64(recheck) || !a.checkedAt.CompareAndSwap(last, now) {
		return
	}
	if !a.reloading.TryLock() {
		return
	}
	defer a.reloading.Unlock()
	st, err := stampOf(a.o.TokensFile)
	if err == nil && st == a.table.Load().stamp {
		return
	}
	if err := a.reloadLocked(); err != nil {
		a.o.Log.Error("tokens file not reloaded: the previous tokens stay in force", "file", a.o.TokensFile, "error", err)
	}
}

func (a *Authenticator) reload() error {
	a.reloading.Lock()
	defer a.reloading.Unlock()
	return a.reloadLocked()
}

func (a *Authenticator) reloadLocked() error {
	st, err := stampOf(a.o.TokensFile)
	if err != nil {
		return err
	}
	f, err := ReadFile(a.o.TokensFile)
	if err != nil {
		return err
	}
	t := &table{byHash: make(map[[sha256.Size]byte]Entry, len(f.Tokens)), stamp: st}
	for _, e := range f.Tokens {
		var h [sha256.Size]byte
		_, _ = hex.Decode(h[:], []byte(e.SHA256)) // ParseFile checked it
		t.byHash[h] = e
	}
	old := a.table.Swap(t)
	a.checkedAt.Store(a.o.now().UnixNano())
	if old.byHash != nil {
		a.o.Log.Info("tokens file reloaded", "file", a.o.TokensFile, "tokens", len(t.byHash))
	}
	return nil
}

func stampOf(path string) (fileStamp, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{mod: st.ModTime(), size: st.Size()}, nil
}
