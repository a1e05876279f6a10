package engine

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// A certificate file that cannot be read stops the start with an error naming the key and
// the file.
func TestStartNamesABadCertificateFile(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.pem")
	cfg := testConfig("")
	cfg.Guard.TLS.CertFile, cfg.Guard.TLS.KeyFile = missing, missing
	_, err := Start(context.Background(), Options{Config: cfg, Log: quiet})
	if err == nil || !strings.Contains(err.Error(), "guard.tls") || !strings.Contains(err.Error(), missing) {
		t.Fatalf("Start with a missing certificate: %v, want an error naming guard.tls and %s", err, missing)
	}
}
