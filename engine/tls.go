package engine

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"

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
	// pairs are the certificate files read, by configuration key, for ReloadTLS.
	pairs map[string]*tlsfiles.Pair
}

// loadTLS reads the certificate files the configuration names; an error names the file.
func loadTLS(cfg *config.Config) (tlsConfigs, error) {
	out := tlsConfigs{pairs: map[string]*tlsfiles.Pair{}}
	if t := cfg.Guard.TLS; t.Enabled() {
		pair, err := tlsfiles.LoadPair(t.CertFile, t.KeyFile)
		if err != nil {
			return out, fmt.Errorf("guard.tls: %w", err)
		}
		out.guard = tlsfiles.Server(pair, nil)
		out.pairs["guard.tls"] = pair
	}
	t := cfg.APIPeer.TLS
	var pair *tlsfiles.Pair
	if t.CertFile != "" {
		var err error
		if pair, err = tlsfiles.LoadPair(t.CertFile, t.KeyFile); err != nil {
			return out, fmt.Errorf("api_peer.tls: %w", err)
		}
		out.pairs["api_peer.tls"] = pair
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

// ReloadTLS reads the certificate and key files of guard.tls and api_peer.tls again now (they
// are also read again within a second of a change of their modification times). A pair that
// fails to load keeps its previous certificate; the error names its key. CA files are read
// only at start.
func (e *Engine) ReloadTLS() error {
	var errs []error
	var read []string
	for _, key := range slices.Sorted(maps.Keys(e.tls.pairs)) {
		if err := e.tls.pairs[key].Reload(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", key, err))
			continue
		}
		read = append(read, key)
	}
	err := errors.Join(errs...)
	if err != nil {
		e.log.Warn("tls: certificate files not read again; the previous certificates stay in use", "error", err, "read", read)
	} else {
		e.log.Info("tls: certificate files read again", "read", read)
	}
	return err
}
