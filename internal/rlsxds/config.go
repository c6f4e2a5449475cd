package rlsxds

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// Config is where the configuration comes from and how the client talks
// to it. Each field says which of envoyproxy/ratelimit's settings it
// stands for; [DefaultConfig] holds their defaults.
type Config struct {
	// Server is the management server's gRPC target: host:port, or a
	// URI such as dns:///host:port or unix:///path
	// (CONFIG_GRPC_XDS_SERVER_URL).
	Server string
	// NodeID identifies this service to the server, which keeps a
	// snapshot per node ID (CONFIG_GRPC_XDS_NODE_ID).
	NodeID string
	// NodeMetadata is the node's metadata, every value a string
	// (CONFIG_GRPC_XDS_NODE_METADATA, read by [ParseNodeMetadata]).
	NodeMetadata map[string]string
	// Headers are sent as gRPC metadata with the stream, for the
	// server's authorization, say (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS,
	// read by [ParseHeaders]). Names are case-insensitive.
	Headers map[string]string
	// TLS, if not nil, secures the connection
	// (CONFIG_GRPC_XDS_SERVER_USE_TLS; [ClientTLS] builds it from the
	// certificate settings). nil connects in plain text.
	TLS *tls.Config
	// MaxRecvMsgSize is the largest response accepted, in bytes; 0 is
	// gRPC's default, 4 MiB (XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES).
	MaxRecvMsgSize int
	// ConnectRetryInterval is how often gRPC dials again while the
	// server cannot be reached, give or take half of it
	// (CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL).
	ConnectRetryInterval time.Duration
	// Backoff is the wait before opening a new stream when one fails or
	// ends, and before refusing a response that was refused already
	// (XDS_CLIENT_BACKOFF_*).
	Backoff Backoff
	// MergeDomains lets several resources configure one domain, as
	// rlsconfig.MergeDomains does (MERGE_DOMAIN_CONFIG).
	MergeDomains bool
	// Check, if not nil, is asked about each configuration that
	// converts, before it is acknowledged: an error refuses the
	// response, as a resource that does not convert does, with the
	// error as the reason. It runs on the watch's goroutine.
	Check func(*rlsconfig.Config) error
}

// Backoff is envoyproxy/ratelimit's reconnection backoff, computed as its
// code does: the n-th wait in a row (from 0) is Initial × Factor^n, with
// Jitter a uniformly random duration between Initial and that, and always
// between Initial and Max. A Factor of 1 or less (the default, 0.5) waits
// Initial every time; set it above 1 for waits that grow. The count
// starts again once a stream delivers a response, where
// envoyproxy/ratelimit keeps counting for the life of the process.
type Backoff struct {
	// Initial is the shortest wait (XDS_CLIENT_BACKOFF_INITIAL_INTERVAL).
	Initial time.Duration
	// Max is the longest wait (XDS_CLIENT_BACKOFF_MAX_INTERVAL).
	Max time.Duration
	// Factor multiplies the wait after each failure
	// (XDS_CLIENT_BACKOFF_RANDOM_FACTOR, which envoyproxy/ratelimit's
	// code uses as the multiplier whatever its name says).
	Factor float64
	// Jitter spreads the waits out (XDS_CLIENT_BACKOFF_JITTER).
	Jitter bool
}

// Wait returns the n-th wait in a row (from 0), with r, a number in
// [0, 1), as the jitter's random draw.
func (b Backoff) Wait(n int, r float64) time.Duration {
	lo, hi := float64(b.Initial), float64(b.Max)
	if lo >= hi {
		return b.Max
	}
	d := lo * math.Pow(b.Factor, float64(n))
	if b.Jitter {
		d = lo + r*(d-lo)
	}
	switch {
	case d >= hi || math.IsNaN(d):
		return b.Max
	case d <= lo:
		return b.Initial
	}
	return time.Duration(d)
}

// DefaultConfig returns envoyproxy/ratelimit's defaults: the server at
// localhost:18000, node ID "default", dials every 3 s, a backoff from 10 s
// to 60 s with factor 0.5 and jitter, plain text.
func DefaultConfig() Config {
	return Config{
		Server:               "localhost:18000",
		NodeID:               "default",
		ConnectRetryInterval: 3 * time.Second,
		Backoff:              Backoff{Initial: 10 * time.Second, Max: 60 * time.Second, Factor: 0.5, Jitter: true},
	}
}

// check reports what is wrong with c, naming the setting to fix.
func (c *Config) check() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("rlsxds: "+format, args...)) }
	if c.Server == "" {
		bad("no server address; set CONFIG_GRPC_XDS_SERVER_URL to the management server's host:port")
	}
	if c.ConnectRetryInterval <= 0 {
		bad("the connect retry interval is %v; set CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL above 0", c.ConnectRetryInterval)
	}
	if c.Backoff.Initial <= 0 {
		bad("the backoff's initial interval is %v; set XDS_CLIENT_BACKOFF_INITIAL_INTERVAL above 0", c.Backoff.Initial)
	}
	if c.Backoff.Max <= 0 {
		bad("the backoff's max interval is %v; set XDS_CLIENT_BACKOFF_MAX_INTERVAL above 0", c.Backoff.Max)
	}
	if !(c.Backoff.Factor > 0) || math.IsInf(c.Backoff.Factor, 0) {
		bad("the backoff's factor is %v; set XDS_CLIENT_BACKOFF_RANDOM_FACTOR to a number above 0", c.Backoff.Factor)
	}
	if c.MaxRecvMsgSize < 0 {
		bad("the largest message is %d bytes; set XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES to 0 (gRPC's default) or more", c.MaxRecvMsgSize)
	}
	for k, v := range c.Headers {
		if err := checkHeader(k, v); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkHeader refuses a header gRPC would refuse on every call, so that
// the mistake shows at start.
func checkHeader(k, v string) error {
	name := strings.ToLower(k)
	if name == "" {
		return fmt.Errorf("rlsxds: a header with an empty name (value %q); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", v)
	}
	if strings.HasPrefix(name, "grpc-") || name == "content-type" || name == "user-agent" || name == "te" {
		return fmt.Errorf("rlsxds: header %q: gRPC sets it itself (as every name starting with grpc-); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", k)
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("rlsxds: header %q: a name holds letters, digits, '-', '_' and '.' only; fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", k)
		}
	}
	if strings.HasSuffix(name, "-bin") {
		return nil // binary values are sent encoded
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return fmt.Errorf("rlsxds: header %q: the value holds byte %#x, and gRPC sends printable ASCII only (or a name ending in -bin); fix CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", k, c)
		}
	}
	return nil
}

// ParseHeaders reads CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS as
// envoyproxy/ratelimit does: name:value pairs separated by commas
// ("x-token:abc,x-team:web"), the value after the first ':', nothing
// trimmed. "" is no headers.
func ParseHeaders(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, ":")
		if !ok {
			return nil, fmt.Errorf("rlsxds: CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS: %q has no ':'; write name:value pairs separated by commas", pair)
		}
		out[k] = v
	}
	return out, nil
}

// ParseNodeMetadata reads CONFIG_GRPC_XDS_NODE_METADATA: key=value pairs
// separated by commas ("zone=eu-1,team=web"), the value after the first
// '='. envoyproxy/ratelimit skips a pair without '='; here it is an error,
// so that the mistake shows. "" is no metadata.
func ParseNodeMetadata(s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return nil, fmt.Errorf("rlsxds: CONFIG_GRPC_XDS_NODE_METADATA: %q has no '='; write key=value pairs separated by commas", pair)
		}
		out[k] = v
	}
	return out, nil
}

// ClientTLS returns the TLS configuration of envoyproxy/ratelimit's
// CONFIG_GRPC_XDS_SERVER_USE_TLS=true: certFile and keyFile, if given, the
// client certificate the server may ask for
// (CONFIG_GRPC_XDS_CLIENT_TLS_CERT, CONFIG_GRPC_XDS_CLIENT_TLS_KEY);
// caFile, if given, a PEM file of certificates trusted besides the
// system's (CONFIG_GRPC_XDS_SERVER_TLS_CACERT); san, if given, the name
// the server's certificate must carry, in place of the address's host
// (CONFIG_GRPC_XDS_SERVER_TLS_SAN).
func ClientTLS(certFile, keyFile, caFile, san string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: san}
	switch {
	case certFile != "" && keyFile != "":
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("rlsxds: the client certificate (CONFIG_GRPC_XDS_CLIENT_TLS_CERT, CONFIG_GRPC_XDS_CLIENT_TLS_KEY): %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	case certFile != "" || keyFile != "":
		return nil, errors.New("rlsxds: a client certificate needs both CONFIG_GRPC_XDS_CLIENT_TLS_CERT and CONFIG_GRPC_XDS_CLIENT_TLS_KEY; set both or neither")
	}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("rlsxds: the server CA (CONFIG_GRPC_XDS_SERVER_TLS_CACERT): %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("rlsxds: the server CA (CONFIG_GRPC_XDS_SERVER_TLS_CACERT): %s holds no PEM certificate", caFile)
		}
		c.RootCAs = pool
	}
	return c, nil
}
