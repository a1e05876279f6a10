package engine

import (
	"net"
	"net/netip"
	"time"

	"github.com/pires/go-proxyproto"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/guard/core"
)

// trustedProxies is guard.trusted_proxies, parsed (Validate has checked every entry).
func trustedProxies(cfg *config.Config) core.Trusted {
	var t core.Trusted
	for _, s := range cfg.Guard.TrustedProxies {
		if p, err := config.ParsePrefix(s); err == nil {
			t = append(t, p)
		}
	}
	return t
}

// proxyProtocol reads a PROXY protocol header (v1 or v2) on the connections of ln that come
// from a trusted proxy, whose RemoteAddr is then the client's; others are served as they are,
// so a header sent by anyone else is a malformed HTTP request.
func proxyProtocol(ln net.Listener, trusted core.Trusted) net.Listener {
	return &proxyproto.Listener{
		Listener:          ln,
		ReadHeaderTimeout: 10 * time.Second,
		ConnPolicy: func(o proxyproto.ConnPolicyOptions) (proxyproto.Policy, error) {
			if ap, err := netip.ParseAddrPort(o.Upstream.String()); err == nil && trusted.Contains(ap.Addr()) {
				return proxyproto.USE, nil
			}
			return proxyproto.SKIP, nil
		},
	}
}
