package engine

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"

	"github.com/berthhq/berth/engine/config"
	"github.com/berthhq/berth/engine/internal/tlsfiles"
)

// tlsConfigs are the engine's TLS settings, built from the configuration's files.
type tlsConfigs struct {
	guard *tls.Config // the guard port's server side; nil serves plain HTTP
	peer  *tls.Config // api-peer's server side; nil serves plain HTTP
	// outbound is the transport of the calls to other nodes and datacenters (api-peer,
	// relays, proxied gateway requests), verifying them against api_peer.tls.ca_file and
	// presenting this node's certificate when asked.
	outbound *http.Transport
}

// loadTLS reads the certificate files the configuration names; an error names the file.
func loadTLS(cfg *config.Config) (tlsConfigs, error) {
	var out tlsConfigs
	if t := cfg.Guard.TLS; t.Enabled() {
		pair, err := tlsfiles.LoadPair(t.CertFile, t.KeyFile)
		if err != nil {
			return out, fmt.Errorf("guard.tls: %w", err)
		}
		out.guard = tlsfiles.Server(pair, nil)
	}
	t := cfg.APIPeer.TLS
	var pair *tlsfiles.Pair
	if t.CertFile != "" {
		var err error
		if pair, err = tlsfiles.LoadPair(t.CertFile, t.KeyFile); err != nil {
			return out, fmt.Errorf("api_peer.tls: %w", err)
		}
	}
	roots, err := tlsfiles.LoadCAs(t.CAFile, true)
	if err != nil {
		return out, fmt.Errorf("api_peer.tls.ca_file: %w", err)
	}
	if pair != nil {
		var clientCAs *x509.CertPool // only the file's authorities may sign a client
		if t.ClientAuth {
			if clientCAs, err = tlsfiles.LoadCAs(t.CAFile, false); err != nil {
				return out, fmt.Errorf("api_peer.tls.ca_file: %w", err)
			}
		}
		out.peer = tlsfiles.Server(pair, clientCAs)
	}
	out.outbound = http.DefaultTransport.(*http.Transport).Clone()
	out.outbound.MaxIdleConnsPerHost = 32
	out.outbound.TLSClientConfig = tlsfiles.Client(roots, pair)
	return out, nil
}

// scheme is the URL scheme of a listener served with c.
func scheme(c *tls.Config) string {
	if c != nil {
		return "https"
	}
	return "http"
}
