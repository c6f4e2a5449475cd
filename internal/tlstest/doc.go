// Package tlstest makes certificates for the module's tests (internal:
// test support, not API): a certificate authority of its own that issues
// server and client certificates and writes them, with their keys, as PEM
// files a service under test reads:
//
//	func TestTLS(t *testing.T) {
//		dir := t.TempDir()
//		ca := tlstest.NewCA(t, dir, "ca") // dir/ca.pem, ca.File
//		cert, key := ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1")
//		client := ca.KeyPair(t, dir, "client", x509.ExtKeyUsageClientAuth, "client.test")
//		roots := ca.Pool() // what a client trusts
//		...
//	}
//
// A file is written beside its place and renamed there, so a service that
// watches it for rotation never reads half of one. Keys are ECDSA P-256;
// certificates are valid from an hour ago for a day.
package tlstest
