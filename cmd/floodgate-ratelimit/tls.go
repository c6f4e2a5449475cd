package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/floodgate/floodgate/internal/dirwatch"
)

// serverTLS is the gRPC server's TLS (GRPC_SERVER_USE_TLS): its
// certificate, loaded again when its files change (a certificate manager
// renewing it, a Secret updated), and the check of client certificates.
type serverTLS struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
	// clientCAs, when set (GRPC_CLIENT_TLS_CACERT), are the only roots a
	// client's certificate is verified against, and one is required.
	clientCAs *x509.CertPool
	// san, when set (GRPC_CLIENT_TLS_SAN), must be a DNS name (or an IP
	// address) the client's certificate holds.
	san string
}

// newServerTLS loads the server's key pair and the clients' CA; errors
// name the variable to fix.
func newServerTLS(certFile, keyFile, caFile, san string) (*serverTLS, error) {
	t := &serverTLS{certFile: certFile, keyFile: keyFile, san: san}
	if err := t.reload(); err != nil {
		return nil, fmt.Errorf("GRPC_SERVER_TLS_CERT=%s, GRPC_SERVER_TLS_KEY=%s: %w", certFile, keyFile, err)
	}
	if caFile != "" {
		pool, err := certPool(x509.NewCertPool(), caFile)
		if err != nil {
			return nil, fmt.Errorf("GRPC_CLIENT_TLS_CACERT=%s: %w", caFile, err)
		}
		t.clientCAs = pool
	}
	return t, nil
}

// reload loads the key pair again; the one in use stays if it fails.
func (t *serverTLS) reload() error {
	kp, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
	if err != nil {
		return err
	}
	t.cert.Store(&kp)
	return nil
}

// config is the server's tls.Config. Unlike upstream's, which adds the
// system's roots to GRPC_CLIENT_TLS_CACERT, a client certificate must
// chain to that CA: a certificate any public CA issued is not a client.
func (t *serverTLS) config() *tls.Config {
	c := &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return t.cert.Load(), nil },
	}
	if t.clientCAs == nil {
		return c
	}
	c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, t.clientCAs
	if t.san != "" {
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
				return errors.New("floodgate-ratelimit: no verified client certificate")
			}
			if err := cs.VerifiedChains[0][0].VerifyHostname(t.san); err != nil {
				return fmt.Errorf("floodgate-ratelimit: the client certificate is not for %s (GRPC_CLIENT_TLS_SAN): %w", t.san, err)
			}
			return nil
		}
	}
	return c
}

// watch loads the key pair again when a file of its directories changes,
// until the returned function is called.
func (t *serverTLS) watch(log *slog.Logger) (func(), error) {
	dirs := []string{filepath.Dir(t.certFile)}
	if d := filepath.Dir(t.keyFile); d != dirs[0] {
		dirs = append(dirs, d)
	}
	names := map[string]bool{filepath.Base(t.certFile): true, filepath.Base(t.keyFile): true, "..data": true}
	var ws []*dirwatch.Watcher
	stop := func() {
		for _, w := range ws {
			_ = w.Close()
		}
	}
	for _, dir := range dirs {
		w, err := dirwatch.Watch(dir, 100*time.Millisecond, func(name string) bool { return names[filepath.Base(name)] }, func() {
			if err := t.reload(); err != nil {
				log.Error("the gRPC server's certificate did not load again; the one in use stays", "cert", t.certFile, "key", t.keyFile, "error", err)
				return
			}
			log.Info("the gRPC server's certificate loaded again", "cert", t.certFile)
		}, func(err error) { log.Error("watching the gRPC server's certificate", "dir", dir, "error", err) })
		if err != nil {
			stop()
			return nil, err
		}
		ws = append(ws, w)
	}
	return stop, nil
}

// redisTLS is the Redis clients' TLS configuration, as upstream builds
// it from REDIS_TLS_CLIENT_CERT and _KEY (a client certificate),
// REDIS_TLS_CACERT (added to the system's roots) and
// REDIS_TLS_SKIP_HOSTNAME_VERIFICATION (the chain is still verified, but
// not the server's name).
func redisTLS(certFile, keyFile, caFile string, skipHostname bool) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if certFile != "" {
		kp, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CLIENT_CERT=%s, REDIS_TLS_CLIENT_KEY=%s: %w", certFile, keyFile, err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	if caFile != "" {
		roots, err := x509.SystemCertPool()
		if err != nil {
			roots = x509.NewCertPool()
		}
		if c.RootCAs, err = certPool(roots, caFile); err != nil {
			return nil, fmt.Errorf("REDIS_TLS_CACERT=%s: %w", caFile, err)
		}
	}
	if skipHostname {
		c.InsecureSkipVerify = true // the chain is verified below, without the name
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			if len(raw) == 0 {
				return errors.New("floodgate-ratelimit: Redis sent no certificate")
			}
			opts := x509.VerifyOptions{Roots: c.RootCAs, Intermediates: x509.NewCertPool()}
			var leaf *x509.Certificate
			for i, der := range raw {
				cert, err := x509.ParseCertificate(der)
				if err != nil {
					return fmt.Errorf("floodgate-ratelimit: Redis's certificate: %w", err)
				}
				if i == 0 {
					leaf = cert
				} else {
					opts.Intermediates.AddCert(cert)
				}
			}
			_, err := leaf.Verify(opts)
			return err
		}
	}
	return c, nil
}

// certPool adds the PEM certificates of file to pool.
func certPool(pool *x509.CertPool, file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in the file")
	}
	return pool, nil
}
