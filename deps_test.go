package floodgate

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLightPackagesStayLight: a net/http user compiles only the standard
// library and golang-lru (TestReadmeNetHTTPDeps holds the README to the
// same list). core, keyfunc, httpmw, debugpage, slogobs
// and overload must never pull a web framework, gRPC, a Redis
// client, the Prometheus client or OpenTelemetry, directly or through
// another package.
func TestLightPackagesStayLight(t *testing.T) {
	forbidden := []string{
		"github.com/gin-gonic/",
		"github.com/labstack/",
		"google.golang.org/grpc",
		"google.golang.org/genproto",
		"github.com/grpc-ecosystem/",
		"github.com/redis/",
		"github.com/go-redis/",
		// Metrics live in promobs; the light packages report through
		// core.Observer and never pull the Prometheus client.
		"github.com/prometheus/",
		// So do they OpenTelemetry, which only otelobs imports: a
		// net/http user who does not import otelobs compiles none of it.
		"go.opentelemetry.io/",
		"github.com/floodgate/floodgate/otelobs",
	}
	allowedThirdParty := []string{
		"github.com/floodgate/floodgate",
		"github.com/hashicorp/golang-lru/v2",
	}
	for _, pkg := range []string{"./core", "./keyfunc", "./httpmw", "./debugpage", "./slogobs", "./overload"} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", pkg, len(deps), deps)
		}
		for _, dep := range deps {
			for _, bad := range forbidden {
				if strings.HasPrefix(dep, bad) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
			first, _, _ := strings.Cut(dep, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, a := range allowedThirdParty {
				if strings.HasPrefix(dep, a) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s depends on %s, which is not on the list a net/http user may compile", pkg, dep)
			}
		}
	}
}

// TestObserversStayOffStores: promobs, otelobs and debugpage read a
// store's health through core.HealthReporter and never import redisstore
// or a Redis client.
func TestObserversStayOffStores(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./promobs", "./otelobs", "./debugpage").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		if strings.HasPrefix(dep, "github.com/floodgate/floodgate/redisstore") || strings.HasPrefix(dep, "github.com/redis/") {
			t.Errorf("promobs, otelobs or debugpage depends on %s", dep)
		}
	}
}

// TestGRPCStaysOffHTTP: grpcmw shares the pipeline, the option plumbing,
// the field formatter and the client-IP parser with httpmw through
// internal packages; it never imports httpmw, keyfunc (whose key functions
// take an *http.Request) or net/http, directly or through them.
func TestGRPCStaysOffHTTP(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./grpcmw").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed only %d packages: %q", len(deps), deps)
	}
	own := []string{"./grpcmw"}
	for _, dep := range deps {
		switch strings.TrimPrefix(dep, "github.com/floodgate/floodgate/") {
		case "httpmw", "ginmw", "echomw", "keyfunc":
			t.Errorf("grpcmw depends on %s", dep)
		}
		if strings.HasPrefix(dep, "github.com/floodgate/floodgate/") {
			own = append(own, dep)
		}
	}
	// net/http may come in through grpc's own transport; what matters is
	// that grpcmw's and the module's packages it uses do not import it.
	out, err = exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}: {{join .Imports \" \"}}"}, own...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -f: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, ": ")
		for _, imp := range strings.Fields(imports) {
			if imp == "net/http" {
				t.Errorf("%s imports net/http", pkg)
			}
		}
	}
}

// TestOptionalPackagesStayLight: the client transports, the rules file
// and the OpenTelemetry observer pull in the light packages and their own
// library (the Structured Field parser; a YAML parser and fsnotify; the
// OpenTelemetry API and what it imports), never gRPC, a web framework, a
// Redis client or the Prometheus client; rules/grpcrules holds the rules'
// gRPC interceptors.
func TestOptionalPackagesStayLight(t *testing.T) {
	light := []string{"github.com/floodgate/floodgate/", "github.com/hashicorp/golang-lru/v2"}
	heavy := []string{"grpcmw", "ginmw", "echomw", "redisstore", "rules/grpcrules", "promobs"}
	for pkg, own := range map[string][]string{
		"./httpclient": {"github.com/dunglas/httpsfv"},
		"./rules":      {"go.yaml.in/yaml/v3", "github.com/fsnotify/fsnotify", "golang.org/x/sys"},
		// The API's global providers log through logr; attribute sets
		// hash with xxhash; the trace API's auto/sdk.
		"./otelobs": {"go.opentelemetry.io/otel", "go.opentelemetry.io/auto/sdk", "github.com/go-logr/", "github.com/cespare/xxhash/v2"},
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed only %d packages: %q", pkg, len(deps), deps)
		}
		for _, dep := range deps {
			for _, h := range heavy {
				if strings.HasPrefix(dep, "github.com/floodgate/floodgate/"+h) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
			first, _, _ := strings.Cut(dep, "/")
			if !strings.Contains(first, ".") {
				continue // standard library
			}
			ok := false
			for _, a := range append(light, own...) {
				ok = ok || strings.HasPrefix(dep, a)
			}
			if !ok {
				t.Errorf("%s depends on %s (gRPC, gin, echo and redis stay out)", pkg, dep)
			}
		}
	}
}
