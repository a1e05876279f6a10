package engine

import (
	"net"
	"net/netip"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/berthhq/berth/guard/core"
)

// proxyProtocol reads a PROXY protocol header (v1 or v2) on the connections of ln that come
// from a trusted proxy, whose RemoteAddr is then the client's; others are served as they are,
// so a header sent by anyone else is a malformed HTTP request. A header must arrive within
// timeout (guard.read_header_timeout_ms).
func proxyProtocol(ln net.Listener, trusted core.Trusted, timeout time.Duration) net.Listener {
	return &proxyproto.Listener{
		Listener:          ln,
		ReadHeaderTimeout: timeout,
		ConnPolicy: func(o proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) {
			if ap, err := netip.ParseAddrPort(o.Upstream.String()); err == nil && trusted.Contains(ap.Addr()) {
				return proxyproto.USE, nil
			}
			return proxyproto.SKIP, nil
		},
	}
}
