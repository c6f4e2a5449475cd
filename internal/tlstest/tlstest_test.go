package tlstest_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/floodgate/floodgate/internal/tlstest"
)

// handshake runs a TLS handshake over loopback between a server with
// server's certificate, which asks for a client certificate signed by
// ca when mutual, and a client trusting ca with client's certificate (if
// any; sent even when the server's list of CAs does not name its
// issuer), and returns the client's error.
func handshake(t *testing.T, ca *tlstest.CA, server tls.Certificate, mutual bool, client *tls.Certificate) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	sc, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	conf := &tls.Config{Certificates: []tls.Certificate{server}, MinVersion: tls.VersionTLS13}
	if mutual {
		conf.ClientAuth, conf.ClientCAs = tls.RequireAndVerifyClientCert, ca.Pool()
	}
	s := tls.Server(sc, conf)
	done := make(chan error, 1)
	go func() {
		err := s.Handshake()
		if err == nil {
			// TLS 1.3 clients learn of a refused certificate on reading.
			_, err = s.Write([]byte("x"))
		}
		s.Close()
		done <- err
	}()
	cconf := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS13}
	if client != nil {
		cconf.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return client, nil }
	}
	c := tls.Client(cc, cconf)
	err = c.Handshake()
	if err == nil {
		_, err = c.Read(make([]byte, 1))
	}
	c.Close()
	<-done
	return err
}

// TestHandshake: a server certificate for 127.0.0.1 and client ones are
// accepted by peers trusting their CA, and refused by peers trusting
// another, or when the use is not the one asked.
func TestHandshake(t *testing.T) {
	dir := t.TempDir()
	ca, other := tlstest.NewCA(t, dir, "ca"), tlstest.NewCA(t, dir, "other")
	server := ca.KeyPair(t, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	client := ca.KeyPair(t, dir, "client", x509.ExtKeyUsageClientAuth, "client.test")
	foreign := other.KeyPair(t, dir, "foreign", x509.ExtKeyUsageClientAuth)
	for _, tc := range []struct {
		name    string
		ca      *tlstest.CA // the client's and the server's trust
		server  tls.Certificate
		mutual  bool
		client  *tls.Certificate
		wantErr string
	}{
		{"server only", ca, server, false, nil, ""},
		{"mutual", ca, server, true, &client, ""},
		{"server of another CA", other, server, false, nil, "certificate signed by unknown authority"},
		{"client of another CA", ca, server, true, &foreign, "unknown certificate authority"},
		{"no client certificate", ca, server, true, nil, "certificate required"},
		{"server certificate as client", ca, server, true, &server, "bad certificate"},
		{"wrong address", ca, ca.KeyPair(t, dir, "elsewhere", x509.ExtKeyUsageServerAuth, "127.0.0.2", "rls.test"), false, nil, "valid for 127.0.0.2, not 127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := handshake(t, tc.ca, tc.server, tc.mutual, tc.client)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("handshake: %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// TestRotate: issuing again under a name replaces the files, with a new
// serial number, and leaves no temporary file.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	serial := func() string {
		pair, err := tls.LoadX509KeyPair(ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		return pair.Leaf.SerialNumber.String()
	}
	if first, second := serial(), serial(); first != "2" || second != "3" {
		t.Fatalf("serial numbers %s then %s, want 2 then 3 (the CA's is 1)", first, second)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range names {
		names[i] = filepath.Base(n)
	}
	if got := strings.Join(names, " "); got != "ca.pem server-key.pem server.pem" {
		t.Fatalf("files %s", got)
	}
}

// TestConcurrentIssue: certificates issued at once each have a serial
// number of their own.
func TestConcurrentIssue(t *testing.T) {
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	const n = 8
	serials := make([]string, n)
	// A test fails only on its own goroutine: each issuer records.
	rs := make([]recorder, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if pair := ca.KeyPair(&rs[i], dir, fmt.Sprint("c", i), x509.ExtKeyUsageClientAuth); pair.Leaf != nil {
				serials[i] = pair.Leaf.SerialNumber.String()
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{"1": true}
	for i, s := range serials {
		if rs[i].fatals != nil {
			t.Fatal(rs[i].fatals)
		}
		if seen[s] {
			t.Fatalf("serial number %s twice among %v", s, serials)
		}
		seen[s] = true
	}
}

// recorder is a TB that keeps what Fatal was given.
type recorder struct{ fatals []string }

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatals = append(r.fatals, fmt.Sprint(args...)) }

// TestFailure: a directory that is not there fails the test once, with
// an error naming the package and the file, and zero values.
func TestFailure(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	ca := tlstest.NewCA(t, dir, "ca")
	for _, tc := range []struct {
		name string
		call func(tlstest.TB) bool // reports zero values
		file string
	}{
		{"NewCA", func(r tlstest.TB) bool { return tlstest.NewCA(r, missing, "ca") == nil }, "ca.pem"},
		{"Issue", func(r tlstest.TB) bool {
			c, k := ca.Issue(r, missing, "server", x509.ExtKeyUsageServerAuth)
			return c == "" && k == ""
		}, "server.pem"},
		{"KeyPair", func(r tlstest.TB) bool {
			return ca.KeyPair(r, missing, "client", x509.ExtKeyUsageClientAuth).Certificate == nil
		}, "client.pem"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			zero := tc.call(r)
			want := "tlstest: open " + filepath.Join(missing, tc.file) + ".tmp: "
			if !zero || len(r.fatals) != 1 || !strings.HasPrefix(r.fatals[0], want) {
				t.Fatalf("zero values %v, failures %q; want one starting %q", zero, r.fatals, want)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatalf("%s: %v", missing, err)
	}
}
