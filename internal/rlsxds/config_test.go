package rlsxds

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/floodgate/floodgate/internal/tlstest"
)

func TestBackoffWait(t *testing.T) {
	const s = time.Second
	upstream := DefaultConfig().Backoff
	for _, tc := range []struct {
		name string
		b    Backoff
		n    int
		r    float64
		want time.Duration
	}{
		// envoyproxy/ratelimit's defaults: a factor below 1 never grows.
		{"default first", upstream, 0, 0.9, 10 * s},
		{"default tenth", upstream, 9, 0.9, 10 * s},
		{"doubling", Backoff{Initial: s, Max: 60 * s, Factor: 2}, 3, 0, 8 * s},
		{"doubling capped", Backoff{Initial: s, Max: 60 * s, Factor: 2}, 6, 0, 60 * s},
		{"huge attempt", Backoff{Initial: s, Max: 60 * s, Factor: 2}, 5000, 0, 60 * s},
		{"jitter low", Backoff{Initial: s, Max: 60 * s, Factor: 2, Jitter: true}, 3, 0, s},
		{"jitter half", Backoff{Initial: s, Max: 60 * s, Factor: 2, Jitter: true}, 3, 0.5, 4500 * time.Millisecond},
		{"jitter capped", Backoff{Initial: s, Max: 60 * s, Factor: 2, Jitter: true}, 10, 0.99, 60 * s},
		{"max below initial", Backoff{Initial: 10 * s, Max: 5 * s, Factor: 2}, 0, 0, 5 * s},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.b.Wait(tc.n, tc.r); got != tc.want {
				t.Fatalf("Wait(%d, %v) = %v, want %v", tc.n, tc.r, got, tc.want)
			}
		})
	}
}

func TestParseHeaders(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", nil, ""},
		{"x-token:abc", map[string]string{"x-token": "abc"}, ""},
		{"a:1,b:2:3", map[string]string{"a": "1", "b": "2:3"}, ""},
		{"a: 1", map[string]string{"a": " 1"}, ""},
		{"a:1,b", nil, `rlsxds: CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: "b" has no ':'; write name:value pairs separated by commas`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseHeaders(tc.in)
			if msg := errText(err); msg != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseHeaders(%q) = %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.wantErr)
			}
		})
	}
}

func TestParseNodeMetadata(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    map[string]string
		wantErr string
	}{
		{"", nil, ""},
		{"zone=eu-1,team=web", map[string]string{"zone": "eu-1", "team": "web"}, ""},
		{"a=b=c", map[string]string{"a": "b=c"}, ""},
		{"key1:val1,key2=val2", nil, `rlsxds: CONFIG_GRPC_XDS_NODE_METADATA: "key1:val1" has no '='; write key=value pairs separated by commas`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseNodeMetadata(tc.in)
			if msg := errText(err); msg != tc.wantErr || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseNodeMetadata(%q) = %v, %q; want %v, %q", tc.in, got, msg, tc.want, tc.wantErr)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestConfigCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"no server", func(c *Config) { c.Server = "" }, "rlsxds: no server address; set CONFIG_GRPC_XDS_SERVER_URL to the management server's host:port"},
		{"retry interval", func(c *Config) { c.ConnectRetryInterval = 0 }, "rlsxds: the connect retry interval is 0s; set CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL above 0"},
		{"backoff", func(c *Config) { c.Backoff = Backoff{Factor: -1} }, "rlsxds: the backoff's initial interval is 0s; set XDS_CLIENT_BACKOFF_INITIAL_INTERVAL above 0\n" +
			"rlsxds: the backoff's max interval is 0s; set XDS_CLIENT_BACKOFF_MAX_INTERVAL above 0\n" +
			"rlsxds: the backoff's factor is -1; set XDS_CLIENT_BACKOFF_RANDOM_FACTOR to a number above 0"},
		{"message size", func(c *Config) { c.MaxRecvMsgSize = -1 }, "rlsxds: the largest message is -1 bytes; set XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES to 0 (gRPC's default) or more"},
		{"header name", func(c *Config) { c.Headers = map[string]string{"x token": "a"} }, `rlsxds: header "x token": a name holds letters, digits, '-', '_' and '.' only; fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`},
		{"reserved header", func(c *Config) { c.Headers = map[string]string{"grpc-timeout": "1S"} }, `rlsxds: header "grpc-timeout": gRPC sets it itself (as every name starting with grpc-); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`},
		{"user agent", func(c *Config) { c.Headers = map[string]string{"User-Agent": "me"} }, `rlsxds: header "User-Agent": gRPC sets it itself (as every name starting with grpc-); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`},
		{"empty header name", func(c *Config) { c.Headers = map[string]string{"": "a"} }, `rlsxds: a header with an empty name (value "a"); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`},
		{"header value", func(c *Config) { c.Headers = map[string]string{"x": "a\nb"} }, `rlsxds: header "x": the value holds byte 0xa, and gRPC sends printable ASCII only (or a name ending in -bin); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS`},
		{"binary header", func(c *Config) { c.Headers = map[string]string{"X-Key-Bin": "a\nb"} }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.edit(&c)
			if got := errText(c.check()); got != tc.want {
				t.Fatalf("check() = %q\nwant %q", got, tc.want)
			}
			if tc.want != "" {
				if w, err := Watch(context.Background(), c, nil); err == nil || w != nil {
					t.Fatalf("Watch = %v, %v; want the error", w, err)
				}
			}
		})
	}
}

// pki is a certificate authority and the files of a server certificate
// for the name xds.test and of a client certificate, all signed by it.
type pki struct {
	dir                   string
	caFile                string
	serverCert, serverKey string
	clientCert, clientKey string
	pool                  *x509.CertPool
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, dir, "ca")
	p := &pki{dir: dir, caFile: ca.File, pool: ca.Pool()}
	p.serverCert, p.serverKey = ca.Issue(t, dir, "server", x509.ExtKeyUsageServerAuth, "xds.test")
	p.clientCert, p.clientKey = ca.Issue(t, dir, "client", x509.ExtKeyUsageClientAuth)
	return p
}

func TestClientTLS(t *testing.T) {
	p := newPKI(t)
	c, err := ClientTLS(p.clientCert, p.clientKey, p.caFile, "xds.test")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Certificates) != 1 || c.ServerName != "xds.test" || c.RootCAs == nil || c.MinVersion != tls.VersionTLS12 {
		t.Fatalf("config: %d certificates, server name %q, roots %v", len(c.Certificates), c.ServerName, c.RootCAs != nil)
	}
	c, err = ClientTLS("", "", "", "")
	if err != nil || c.Certificates != nil || c.RootCAs != nil || c.ServerName != "" {
		t.Fatalf("ClientTLS with nothing = %+v, %v; want the system's roots and no certificate", c, err)
	}
	notPEM := filepath.Join(p.dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                  string
		cert, key, ca, prefix string
	}{
		{"cert without key", p.clientCert, "", "", "rlsxds: a client certificate needs both CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY; set both or neither"},
		{"key without cert", "", p.clientKey, "", "rlsxds: a client certificate needs both"},
		{"missing key file", p.clientCert, filepath.Join(p.dir, "none.pem"), "", "rlsxds: the client certificate (CONFIG_GRPC_XDS_CLIENT_TLS_CERT, CONFIG_GRPC_XDS_CLIENT_TLS_KEY): open "},
		{"missing CA file", "", "", filepath.Join(p.dir, "none.pem"), "rlsxds: the server CA (CONFIG_GRPC_XDS_SERVER_TLS_CACERT): open "},
		{"CA not PEM", "", "", notPEM, "rlsxds: the server CA (CONFIG_GRPC_XDS_SERVER_TLS_CACERT): " + notPEM + " holds no PEM certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := ClientTLS(tc.cert, tc.key, tc.ca, ""); err == nil || !strings.HasPrefix(err.Error(), tc.prefix) {
				t.Fatalf("error %v, want it to start %q", err, tc.prefix)
			}
		})
	}
}

// TestWatchTLS connects over mutual TLS to a server whose certificate
// names xds.test, not the address: with the SAN setting and the client
// certificate the configuration arrives; without either it does not, and
// the failure is reported.
func TestWatchTLS(t *testing.T) {
	p := newPKI(t)
	pair, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	if err != nil {
		t.Fatal(err)
	}
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: p.pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	s := startServer(t, grpc.Creds(creds))
	s.set("n", "1", rateLimit("foo", "foo", "k1", "v1", 3, rlsconfv3.RateLimitUnit_MINUTE))
	host, _, err := net.SplitHostPort(s.addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("address %s", s.addr)
	}

	for _, tc := range []struct {
		name               string
		cert, key, ca, san string
		ok                 bool
		want               string // in the client's error, if it sees why
	}{
		{"mutual TLS", p.clientCert, p.clientKey, p.caFile, "xds.test", true, ""},
		{"without the SAN", p.clientCert, p.clientKey, p.caFile, "", false, "cannot validate certificate for 127.0.0.1"},
		{"without the CA", p.clientCert, p.clientKey, "", "xds.test", false, "certificate signed by unknown authority"},
		// The server refuses the handshake, which the client may see
		// as the connection closing.
		{"without a client certificate", "", "", p.caFile, "xds.test", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := fastConfig(s, "n")
			if cfg.TLS, err = ClientTLS(tc.cert, tc.key, tc.ca, tc.san); err != nil {
				t.Fatal(err)
			}
			_, ups := watch(t, cfg, nil)
			if tc.ok {
				_, u := ups.waitFor(t, 0, "an update", func(update) bool { return true })
				if u.errs != nil || u.c.Domain("foo") == nil {
					t.Fatalf("errors %v", u.errs)
				}
				return
			}
			// Three failed attempts in a row, and no configuration.
			ups.waitFor(t, 2, "three updates", func(update) bool { return true })
			for _, u := range ups.all()[:3] {
				if len(u.errs) != 1 || !strings.Contains(u.errs[0].Error(), tc.want) || len(u.c.Domains()) != 0 {
					t.Fatalf("errors %v, want one holding %q", u.errs, tc.want)
				}
			}
		})
	}
}
