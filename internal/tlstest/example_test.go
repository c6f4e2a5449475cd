package tlstest_test

import (
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"

	"github.com/floodgate/floodgate/internal/tlstest"
)

// printT stands in for a test's *testing.T, which tests pass instead: it
// prints a failure.
type printT struct{}

func (printT) Helper()           {}
func (printT) Fatal(args ...any) { fmt.Println(args...) }

// A server certificate for an address and a DNS name, which a client
// trusting the CA's pool accepts for those names and no other.
func Example() {
	dir, err := os.MkdirTemp("", "tlstest")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	ca := tlstest.NewCA(printT{}, dir, "ca")
	pair := ca.KeyPair(printT{}, dir, "server", x509.ExtKeyUsageServerAuth, "127.0.0.1", "rls.test")
	fmt.Println(filepath.Base(ca.File), pair.Leaf.Subject.CommonName, pair.Leaf.IPAddresses, pair.Leaf.DNSNames)
	for _, name := range []string{"127.0.0.1", "rls.test", "other.test"} {
		_, err := pair.Leaf.Verify(x509.VerifyOptions{Roots: ca.Pool(), DNSName: name})
		fmt.Println(name, err == nil)
	}
	// Output:
	// ca.pem server [127.0.0.1] [rls.test]
	// 127.0.0.1 true
	// rls.test true
	// other.test false
}
