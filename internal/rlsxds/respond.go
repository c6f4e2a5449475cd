package rlsxds

import (
	"context"
	"errors"
	"fmt"
	"strings"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// refusal is a refused response, remembered so that the same response
// sent again is refused again after a wait, not at once (go-control-plane's
// cache answers a refusal with the response it refused), and reported once.
type refusal struct {
	version   string
	resources []*anypb.Any
	errs      []error
	attempt   int // refusals of it in a row
}

// request is the next request: an acknowledgement of the version in force
// when detail is nil, else a refusal.
func (w *Watcher) request(nonce string, detail *statuspb.Status) *discoveryv3.DiscoveryRequest {
	return &discoveryv3.DiscoveryRequest{
		VersionInfo:   w.acked,
		Node:          w.node,
		TypeUrl:       TypeURL,
		ResponseNonce: nonce,
		ErrorDetail:   detail,
	}
}

// handle takes or refuses a response and returns the request that
// answers it; nil when none does. Its error ends the stream.
func (w *Watcher) handle(ctx context.Context, resp *discoveryv3.DiscoveryResponse) (*discoveryv3.DiscoveryRequest, error) {
	if resp.GetTypeUrl() != TypeURL {
		w.report(fmt.Errorf("rlsxds: ignored a response of type %q, which was not asked for (the server sends %s)", resp.GetTypeUrl(), TypeURL))
		return nil, nil
	}
	if r := w.refused; r != nil && r.version == resp.GetVersionInfo() && sameResources(r.resources, resp.GetResources()) {
		r.attempt++
		if err := w.sleep(ctx, w.cfg.Backoff.Wait(r.attempt-1, w.rand())); err != nil {
			return nil, err
		}
		return w.request(resp.GetNonce(), refusedStatus(resp.GetVersionInfo(), w.acked, r.errs)), nil
	}
	c, err := w.convert(resp.GetResources())
	if err == nil && w.cfg.Check != nil {
		if err = w.cfg.Check(c); err != nil {
			err = fmt.Errorf("rlsxds: the configuration is refused: %w", err)
		}
	}
	if err != nil {
		errs := split(err)
		w.refused = &refusal{version: resp.GetVersionInfo(), resources: resp.GetResources(), errs: errs}
		out := make([]error, len(errs))
		for i, e := range errs {
			out[i] = fmt.Errorf("rlsxds: version %q refused, %s stays: %w", resp.GetVersionInfo(), describe(w.acked), e)
		}
		w.update(w.Config(), out)
		return w.request(resp.GetNonce(), refusedStatus(resp.GetVersionInfo(), w.acked, errs)), nil
	}
	w.refused = nil
	w.acked = resp.GetVersionInfo()
	v := resp.GetVersionInfo()
	w.version.Store(&v)
	w.cur.Store(c)
	w.update(c, nil)
	return w.request(resp.GetNonce(), nil), nil
}

// convert reads a response's resources.
func (w *Watcher) convert(resources []*anypb.Any) (*rlsconfig.Config, error) {
	var errs []error
	list := make([]*rlsconfv3.RateLimitConfig, 0, len(resources))
	for i, a := range resources {
		rc := &rlsconfv3.RateLimitConfig{}
		if a.GetTypeUrl() != TypeURL {
			errs = append(errs, fmt.Errorf("rlsxds: resources[%d] has type %q; the server must send %s", i, a.GetTypeUrl(), TypeURL))
			continue
		}
		if err := a.UnmarshalTo(rc); err != nil {
			errs = append(errs, fmt.Errorf("rlsxds: resources[%d] does not decode: %w", i, err))
			continue
		}
		list = append(list, rc)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return Convert(list, w.cfg.MergeDomains)
}

// sameResources reports whether two responses hold the same resources.
func sameResources(a, b []*anypb.Any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !proto.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}

// split returns the errors err joins, or err alone.
func split(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// describe names the configuration in force in messages.
func describe(version string) string {
	if version == "" {
		return "the empty configuration"
	}
	return fmt.Sprintf("the configuration of version %q", version)
}

// refusedStatus is a refusal's reason, for the server's logs.
func refusedStatus(version, acked string, errs []error) *statuspb.Status {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return &statuspb.Status{
		Code:    int32(codes.InvalidArgument),
		Message: fmt.Sprintf("version %q refused, %s stays: %s", version, describe(acked), strings.Join(msgs, "; ")),
	}
}

func (w *Watcher) report(err error) { w.update(w.Config(), []error{err}) }

func (w *Watcher) update(c *rlsconfig.Config, errs []error) {
	if w.onUpdate != nil {
		w.onUpdate(c, errs)
	}
}
