package handlers

// DescribeClientQuotas (key 48), v0-1. Answered by brokers from their
// metadata image, as Kafka's ClientQuotasImage.describe: each filter
// component names an entity type (user, client-id, ip) and matches it
// EXACT (a name), DEFAULT (the type's default entity) or ANY (any name or
// the default). An entity matches when it has every component's type
// matching it; with strict, it must also have no other part. No components
// without strict lists every entity. Entities come sorted (those with a
// user, then client-id ones, then ip ones; see
// metadata.CompareQuotaEntities), each with its parts in the order user,
// client-id, ip and its quotas sorted by key.
//
// A bad filter fails the whole request with INVALID_REQUEST (an empty or
// repeated entity type, EXACT without a name, DEFAULT or ANY with one, an
// unknown match type, ip combined with user or client-id) or
// UNSUPPORTED_VERSION (an entity type Kafka does not know), and no entries.
//
// Authorization: DESCRIBE_CONFIGS on CLUSTER, else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/network"
)

var describeClientQuotasAPI = api{key: 48, min: 0, max: 1, handle: (*Handlers).describeClientQuotas}

func (h *Handlers) describeClientQuotas(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeClientQuotasRequest)
	resp := r.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f, code, err := parseQuotaFilter(r)
	if err != nil {
		msg := err.Error()
		resp.ErrorCode, resp.ErrorMessage = code, &msg
		return resp, nil
	}
	quotas := h.image().ClientQuotas
	var matched []metadata.QuotaEntity
	for e := range quotas {
		if f.matches(e) {
			matched = append(matched, e)
		}
	}
	slices.SortFunc(matched, metadata.CompareQuotaEntities)
	resp.Entries = make([]kmsg.DescribeClientQuotasResponseEntry, 0, len(matched))
	for _, e := range matched {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, p := range e.Data() {
			ee := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ee.Type, ee.Name = p.EntityType, p.EntityName
			entry.Entity = append(entry.Entity, ee)
		}
		values := quotas[e]
		for _, key := range slices.Sorted(maps.Keys(values)) {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = key, values[key]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}

// quotaFilter is a parsed DescribeClientQuotas filter: per entity type,
// the name an entity must have (exact: a name, or nil for the default) or
// just the type (anyName).
type quotaFilter struct {
	exact   map[string]*string
	anyName map[string]bool
	strict  bool
}

// parseQuotaFilter checks a request's components as Kafka does and returns
// the filter, or the error code and message the request gets.
func parseQuotaFilter(r *kmsg.DescribeClientQuotasRequest) (quotaFilter, int16, error) {
	f := quotaFilter{exact: map[string]*string{}, anyName: map[string]bool{}, strict: r.Strict}
	for _, c := range r.Components {
		if c.EntityType == "" {
			return f, kerr.InvalidRequest.Code, errors.New("Invalid empty entity type.")
		}
		if _, ok := f.exact[c.EntityType]; ok || f.anyName[c.EntityType] {
			return f, kerr.InvalidRequest.Code, fmt.Errorf("Entity type %s cannot appear more than once in the filter.", c.EntityType)
		}
		switch c.EntityType {
		case metadata.QuotaEntityUser, metadata.QuotaEntityClientID, metadata.QuotaEntityIP:
		default:
			return f, kerr.UnsupportedVersion.Code, fmt.Errorf("Unsupported entity type %s", c.EntityType)
		}
		switch c.MatchType {
		case kmsg.QuotasMatchTypeExact:
			if c.Match == nil {
				return f, kerr.InvalidRequest.Code, errors.New("Request specified MATCH_TYPE_EXACT, but set match string to null.")
			}
			f.exact[c.EntityType] = c.Match
		case kmsg.QuotasMatchTypeDefault:
			if c.Match != nil {
				return f, kerr.InvalidRequest.Code, errors.New("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
			}
			f.exact[c.EntityType] = nil
		case kmsg.QuotasMatchTypeAny:
			if c.Match != nil {
				return f, kerr.InvalidRequest.Code, errors.New("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
			}
			f.anyName[c.EntityType] = true
		default:
			return f, kerr.InvalidRequest.Code, fmt.Errorf("Unknown match type %d", c.MatchType)
		}
	}
	if f.has(metadata.QuotaEntityIP) && (f.has(metadata.QuotaEntityUser) || f.has(metadata.QuotaEntityClientID)) {
		return f, kerr.InvalidRequest.Code, errors.New("Invalid entity filter component combination. IP filter component should not be used with user or clientId filter component.")
	}
	return f, 0, nil
}

func (f quotaFilter) has(entityType string) bool {
	_, ok := f.exact[entityType]
	return ok || f.anyName[entityType]
}

// matches is ClientQuotasImage.matches.
func (f quotaFilter) matches(e metadata.QuotaEntity) bool {
	data := e.Data()
	if f.strict && len(data) != len(f.exact)+len(f.anyName) {
		return false
	}
	named := make(map[string]*string, len(data))
	for _, p := range data {
		named[p.EntityType] = p.EntityName
	}
	for typ, want := range f.exact {
		got, ok := named[typ]
		if !ok || (got == nil) != (want == nil) || (got != nil && *got != *want) {
			return false
		}
	}
	for typ := range f.anyName {
		if _, ok := named[typ]; !ok {
			return false
		}
	}
	return true
}
