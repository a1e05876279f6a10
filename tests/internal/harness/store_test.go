package harness

import (
	"net/url"
	"strings"
	"testing"

	"github.com/berthhq/berth/pkg/udb"
)

func TestStoreURLUnset(t *testing.T) {
	t.Setenv(DBURLEnv, "")
	for _, u := range []string{"mem://", "file:///tmp/x/db", "file:///tmp/x/db?sync=false"} {
		if got := StoreURL(t, u); got != u {
			t.Errorf("StoreURL(%q) without %s: got %q, want it unchanged", u, DBURLEnv, got)
		}
	}
}

func TestStoreURLShared(t *testing.T) {
	t.Setenv(DBURLEnv, "mem://?max_watches=50")
	prefixOf := func(s string) string {
		t.Helper()
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "mem" || u.Query().Get("max_watches") != "50" {
			t.Fatalf("StoreURL gave %q: want the shared store's URL with its options", s)
		}
		p := u.Query().Get(udb.PrefixParam)
		if !strings.HasPrefix(p, "fd") || len(p) != 2*(len(testPrefixTag)+8) {
			t.Fatalf("StoreURL gave %q: want a %s= of the test tag and 8 random bytes", s, udb.PrefixParam)
		}
		return p
	}
	a1 := prefixOf(StoreURL(t, "file:///tmp/a/db"))
	a2 := prefixOf(StoreURL(t, "file:///tmp/a/db?sync=false"))
	b := prefixOf(StoreURL(t, "file:///tmp/b/db"))
	m1, m2 := prefixOf(StoreURL(t, "mem://")), prefixOf(StoreURL(t, "mem://"))
	if a1 != a2 {
		t.Errorf("one file:// store got two prefixes, %s and %s", a1, a2)
	}
	if len(map[string]bool{a1: true, b: true, m1: true, m2: true}) != 4 {
		t.Errorf("prefixes of different stores collide: %s %s %s %s", a1, b, m1, m2)
	}
	if u := "postgres://127.0.0.1/x"; StoreURL(t, u) != u {
		t.Errorf("StoreURL(%q) changed a URL that is neither mem:// nor file://", u)
	}
}
