package rlsxds

import (
	"errors"
	"fmt"

	rlsconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"

	"github.com/floodgate/floodgate/internal/rlsconfig"
)

// TypeURL is the type of the resources the client subscribes to, as
// envoyproxy/ratelimit's client does.
const TypeURL = "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig"

// Convert returns the configuration of a response's RateLimitConfig
// resources. Each is one domain, read as envoyproxy/ratelimit reads the
// YAML file of the same content and checked as rlsconfig.Parse checks
// one; floodgate's additions to the format have no fields there. Two
// resources of one domain are an error unless merge is set, as
// MERGE_DOMAIN_CONFIG does for files.
//
// The error, if any, joins one error per resource that does not convert,
// each naming the resource; then the configuration is nil, since a
// response is taken whole or not at all.
func Convert(resources []*rlsconfv3.RateLimitConfig, merge bool) (*rlsconfig.Config, error) {
	var errs []error
	domains := make([]*rlsconfig.Domain, 0, len(resources))
	for i, rc := range resources {
		d, err := Domain(resourceName(i, rc), rc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		domains = append(domains, d)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	if merge {
		if err := mergeable(resources); err != nil {
			return nil, err
		}
	}
	var opts []rlsconfig.Option
	if merge {
		opts = append(opts, rlsconfig.MergeDomains())
	}
	c, err := rlsconfig.Of(domains, opts...)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// resourceName names the i-th resource in errors and rules.
func resourceName(i int, rc *rlsconfv3.RateLimitConfig) string {
	if rc.GetName() == "" {
		return fmt.Sprintf("RateLimitConfig #%d", i)
	}
	return fmt.Sprintf("RateLimitConfig %q", rc.GetName())
}

// Domain converts one resource; name names it in errors and rules.
func Domain(name string, rc *rlsconfv3.RateLimitConfig) (*rlsconfig.Domain, error) {
	return rlsconfig.FromData(name, &rlsconfig.DomainData{
		Domain:      rc.GetDomain(),
		Descriptors: descriptors(rc.GetDescriptors()),
	})
}

func descriptors(list []*rlsconfv3.RateLimitDescriptor) []rlsconfig.DescriptorData {
	if len(list) == 0 {
		return nil
	}
	out := make([]rlsconfig.DescriptorData, len(list))
	for i, d := range list {
		out[i] = rlsconfig.DescriptorData{
			Key:            d.GetKey(),
			Value:          d.GetValue(),
			Descriptors:    descriptors(d.GetDescriptors()),
			ShadowMode:     d.GetShadowMode(),
			QuotaMode:      d.GetQuotaMode(),
			DetailedMetric: d.GetDetailedMetric(),
		}
		if m := d.GetMetadata(); m != nil {
			out[i].Metadata = m.AsMap()
		}
		if p := d.GetRateLimit(); p != nil {
			rl := &rlsconfig.RateLimitData{
				// The enum's name, as envoyproxy/ratelimit passes it
				// to its YAML reader: UNKNOWN (0), or a number for a
				// value the enum lacks, is not a unit.
				Unit:            p.GetUnit().String(),
				RequestsPerUnit: p.GetRequestsPerUnit(),
				Unlimited:       p.GetUnlimited(),
				Name:            p.GetName(),
			}
			for _, r := range p.GetReplaces() {
				rl.Replaces = append(rl.Replaces, r.GetName())
			}
			out[i].RateLimit = rl
		}
	}
	return out
}

// mergeable reports a top-level descriptor that two resources of one
// domain both define, naming both by their paths, where rlsconfig's merge
// would give the first one's line, which resources do not have. Each
// resource has converted, so its own descriptors differ.
func mergeable(resources []*rlsconfv3.RateLimitConfig) error {
	type at struct {
		res  int
		path string
	}
	seen := map[string]map[string]at{} // domain -> composite key -> first
	for i, rc := range resources {
		first := seen[rc.GetDomain()]
		if first == nil {
			first = map[string]at{}
			seen[rc.GetDomain()] = first
		}
		for j, d := range rc.GetDescriptors() {
			if prev, ok := first[composite(d)]; ok {
				return &rlsconfig.Error{File: resourceName(i, rc), Field: fmt.Sprintf("descriptors[%d]", j),
					Err: fmt.Errorf("duplicate descriptor %s.%s (also %s of %s); when resources merge a domain, each top-level descriptor must be in one of them", rc.GetDomain(), composite(d), prev.path, resourceName(prev.res, resources[prev.res]))}
			}
		}
		for j, d := range rc.GetDescriptors() {
			first[composite(d)] = at{i, fmt.Sprintf("descriptors[%d]", j)}
		}
	}
	return nil
}

// composite is the key envoyproxy/ratelimit indexes a descriptor by.
func composite(d *rlsconfv3.RateLimitDescriptor) string {
	if d.GetValue() == "" {
		return d.GetKey()
	}
	return d.GetKey() + "_" + d.GetValue()
}
