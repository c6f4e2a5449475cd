package tlstest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// TB is the part of testing.TB this package reports to, so that an
// example or a test of a failure can stand in for a test. Fatal is called
// once at most, and the call returns zero values after it.
type TB interface {
	Helper()
	Fatal(args ...any)
}

// CA is a certificate authority of a test. It is safe for concurrent use:
// each certificate it issues has a serial number of its own.
type CA struct {
	// File is the PEM file of the CA's certificate: what a service is
	// told to trust.
	File string

	cert   *x509.Certificate
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewCA makes a CA whose certificate is named name and written to
// dir/name.pem.
func NewCA(t TB, dir, name string) *CA {
	t.Helper()
	ca, err := newCA(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func newCA(dir, name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tlstest: the key of CA %s: %w", name, err)
	}
	ca := &CA{key: key}
	tmpl := template(ca.serial.Add(1), name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tlstest: CA %s: %w", name, err)
	}
	if ca.cert, err = x509.ParseCertificate(der); err != nil {
		return nil, fmt.Errorf("tlstest: CA %s: %w", name, err)
	}
	ca.File = filepath.Join(dir, name+".pem")
	if err := writePEM(ca.File, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	return ca, nil
}

// Issue makes a certificate named name for use (x509.ExtKeyUsageServerAuth
// or ExtKeyUsageClientAuth) and for names (each an IP address or a DNS
// name), signed by ca, and writes it and its key to dir/name.pem and
// dir/name-key.pem, in place of any earlier ones: issuing again under the
// same name rotates the files.
func (ca *CA) Issue(t TB, dir, name string, use x509.ExtKeyUsage, names ...string) (certFile, keyFile string) {
	t.Helper()
	certFile, keyFile, err := ca.issue(dir, name, use, names)
	if err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// KeyPair issues as [CA.Issue] does and loads the files, for a client
// (or a server) of the test's own.
func (ca *CA) KeyPair(t TB, dir, name string, use x509.ExtKeyUsage, names ...string) tls.Certificate {
	t.Helper()
	certFile, keyFile, err := ca.issue(dir, name, use, names)
	if err != nil {
		t.Fatal(err)
		return tls.Certificate{}
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(fmt.Errorf("tlstest: %s: %w", name, err))
	}
	return pair
}

// Pool returns a new certificate pool holding ca's certificate alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func (ca *CA) issue(dir, name string, use x509.ExtKeyUsage, names []string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("tlstest: the key of %s: %w", name, err)
	}
	tmpl := template(ca.serial.Add(1), name)
	tmpl.KeyUsage, tmpl.ExtKeyUsage = x509.KeyUsageDigitalSignature, []x509.ExtKeyUsage{use}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return "", "", fmt.Errorf("tlstest: %s: %w", name, err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return "", "", fmt.Errorf("tlstest: the key of %s: %w", name, err)
	}
	certFile, keyFile = filepath.Join(dir, name+".pem"), filepath.Join(dir, name+"-key.pem")
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "EC PRIVATE KEY", kder); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// template is what every certificate shares: the name, a serial number
// and a validity that tolerates a clock an hour behind.
func template(serial int64, name string) *x509.Certificate {
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
	}
}

// writePEM writes der as a PEM block of typ beside file and renames it
// there, so that a reader sees the old file or the new, never half.
func writePEM(file, typ string, der []byte) error {
	tmp := file + ".tmp"
	if err := os.WriteFile(tmp, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("tlstest: %w", err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("tlstest: %w", err)
	}
	return nil
}
