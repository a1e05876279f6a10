package core

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Trusted is the set of proxies allowed to say who a client is (guard.trusted_proxies).
// The zero value trusts nobody.
type Trusted []netip.Prefix

// Contains reports whether addr is a trusted proxy.
func (t Trusted) Contains(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range t {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// Sent reports whether r's socket peer is a trusted proxy, whose X-Forwarded-* headers are
// then believed.
func (t Trusted) Sent(r *http.Request) bool {
	peer := socketAddr(r.RemoteAddr)
	return peer.IsValid() && t.Contains(peer)
}

// ClientIP is the address a request is counted and reported by: the socket's peer, unless
// that peer is a trusted proxy; then the rightmost X-Forwarded-For entry that is not a
// trusted proxy itself (each proxy appends the address it saw, so entries to the left of the
// first untrusted one are the client's to write, and not believed). An entry that is not an
// IP address ends the walk at the hop that sent it. With no trusted proxies a client cannot
// choose its address, so rotating X-Forwarded-For does not escape the rate limit.
func ClientIP(r *http.Request, trusted Trusted) string {
	peer := socketAddr(r.RemoteAddr)
	if len(trusted) == 0 || !peer.IsValid() || !trusted.Contains(peer) {
		return hostOf(r.RemoteAddr)
	}
	client := peer
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		entries := strings.Split(hops[i], ",")
		for j := len(entries) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(entries[j]))
			if err != nil {
				return client.String()
			}
			client = a.Unmap()
			if !trusted.Contains(client) {
				return client.String()
			}
		}
	}
	return client.String()
}

// socketAddr parses a RemoteAddr ("host:port"), or returns the zero Addr.
func socketAddr(remote string) netip.Addr {
	ap, err := netip.ParseAddrPort(remote)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// hostOf is RemoteAddr without its port.
func hostOf(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
