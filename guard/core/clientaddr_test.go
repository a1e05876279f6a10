package core

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	proxies := Trusted{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}
	for _, tc := range []struct {
		name         string
		trusted      Trusted
		xff          []string
		remote, want string
	}{
		{name: "no header", remote: "198.51.100.1:5000", want: "198.51.100.1"},
		{name: "untrusted peer's header ignored", xff: []string{"203.0.113.7"}, remote: "198.51.100.1:5000", want: "198.51.100.1"},
		{name: "no proxies trusted", xff: []string{"203.0.113.7"}, remote: "10.0.0.1:5000", want: "10.0.0.1"},
		{name: "trusted peer", trusted: proxies, xff: []string{"203.0.113.7"}, remote: "10.0.0.1:5000", want: "203.0.113.7"},
		{name: "rightmost untrusted entry", trusted: proxies, xff: []string{"1.2.3.4, 203.0.113.7, 10.0.0.9"}, remote: "10.0.0.1:5000", want: "203.0.113.7"},
		{name: "repeated headers in order", trusted: proxies, xff: []string{"1.2.3.4", "203.0.113.8", "10.0.0.9"}, remote: "10.0.0.1:5000", want: "203.0.113.8"},
		{name: "all entries trusted", trusted: proxies, xff: []string{"10.1.1.1, 10.0.0.9"}, remote: "10.0.0.1:5000", want: "10.1.1.1"},
		{name: "garbage stops at the hop that sent it", trusted: proxies, xff: []string{"203.0.113.7, nonsense, 10.0.0.9"}, remote: "10.0.0.1:5000", want: "10.0.0.9"},
		{name: "trusted peer, no header", trusted: proxies, remote: "10.0.0.1:5000", want: "10.0.0.1"},
		{name: "IPv6 proxy", trusted: proxies, xff: []string{" 2001:db8::1 "}, remote: "[fd00::1]:80", want: "2001:db8::1"},
		{name: "IPv4-mapped peer", trusted: proxies, xff: []string{"203.0.113.9"}, remote: "[::ffff:10.0.0.1]:80", want: "203.0.113.9"},
		{name: "not host:port", trusted: proxies, remote: "pipe", want: "pipe"},
	} {
		r := &http.Request{Header: http.Header{}, RemoteAddr: tc.remote}
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := ClientIP(r, tc.trusted); got != tc.want {
			t.Errorf("%s: ClientIP(xff %q, %q) = %q, want %q", tc.name, tc.xff, tc.remote, got, tc.want)
		}
	}
}
