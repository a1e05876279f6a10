package engine

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// String is what was written.
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// otherAddress is an address of this machine that is not loopback, or "" when it has none.
func otherAddress(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	return ""
}

// reachable reports whether a TCP connection to host:port is accepted.
func reachable(host string, port int) bool {
	c, err := net.DialTimeout("tcp", net.JoinHostPort(host, strconv.Itoa(port)), 2*time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// Without an admin token the default hosts mean loopback only; with one, every interface.
func TestSafeBinds(t *testing.T) {
	other := otherAddress(t)
	for _, tc := range []struct {
		name, token string
		anonymous   bool
		everywhere  bool
		logged      string
	}{
		{name: "no token", everywhere: false, logged: "listening on loopback only"},
		{name: "admin token", token: "s3cret", everywhere: true},
		{name: "allow_anonymous", anonymous: true, everywhere: true, logged: "without an admin token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(tc.token)
			cfg.Guard.Host, cfg.APIPeer.Host, cfg.Metrics.Host = "", "", ""
			cfg.Auth.AllowAnonymous = tc.anonymous
			var logs syncBuffer
			e, err := Start(context.Background(), Options{Config: cfg, Log: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Shutdown(context.Background())
			for _, addr := range []net.Addr{e.PublicAddr(), e.PeerAddr(), e.MetricsAddr()} {
				port := addr.(*net.TCPAddr).Port
				if !reachable("127.0.0.1", port) {
					t.Errorf("%s: 127.0.0.1 refused", addr)
				}
				if !tc.everywhere && !reachable("::1", port) && hasIPv6Loopback() {
					t.Errorf("%s: ::1 refused", addr)
				}
				if other != "" && reachable(other, port) != tc.everywhere {
					t.Errorf("%s: reachable on %s = %v, want %v", addr, other, !tc.everywhere, tc.everywhere)
				}
			}
			if tc.logged != "" && !strings.Contains(logs.String(), tc.logged) {
				t.Errorf("the start's logs do not say %q:\n%s", tc.logged, logs.String())
			}
			if tc.token != "" && strings.Contains(logs.String(), tc.token) {
				t.Errorf("the logs show the admin token:\n%s", logs.String())
			}
		})
	}
	if other == "" {
		t.Log("this machine has no address but loopback: reachability from elsewhere not checked")
	}
}

// Naming an interface other machines reach, without a token or allow_anonymous, stops the
// start with an error that names the key and the way out.
func TestRefusesAnOpenBindWithoutToken(t *testing.T) {
	for _, host := range []string{"0.0.0.0", "::", "192.0.2.1"} {
		cfg := testConfig("")
		cfg.Guard.Host = host
		_, err := Start(context.Background(), Options{Config: cfg, Log: quiet})
		if err == nil || !strings.Contains(err.Error(), "guard.host") || !strings.Contains(err.Error(), "auth.allow_anonymous") {
			t.Errorf("guard.host %q without a token: %v, want an error naming guard.host and auth.allow_anonymous", host, err)
		}
	}
}

func hasIPv6Loopback() bool {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
