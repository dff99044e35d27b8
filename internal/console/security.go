package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The security page: the cluster's ACLs and client quotas as the visitor's
// principal may see them. Both are read with the visitor's client, so the
// broker's authorizer decides (DESCRIBE on the cluster for ACLs,
// DESCRIBE_CONFIGS for quotas) and a refusal is shown as such, not as an
// empty list.

type aclView struct {
	Principal    string `json:"principal"`
	Host         string `json:"host"`
	ResourceType string `json:"resourceType"`
	Resource     string `json:"resource"`
	PatternType  string `json:"patternType"`
	Operation    string `json:"operation"`
	Permission   string `json:"permission"`
}

type quotaView struct {
	// Entity is "user=alice,client-id=<default>" as Kafka's tools print it.
	Entity string             `json:"entity"`
	Values map[string]float64 `json:"values"`
}

// securityPart is one list of the page or why it cannot be shown: Disabled
// when the cluster has no authorizer (ACLs), Error when the broker refused
// or failed.
type securityPart[T any] struct {
	Items    []T    `json:"items"`
	Disabled bool   `json:"disabled,omitempty"`
	Error    string `json:"error,omitempty"`
}

type securityView struct {
	ACLs   securityPart[aclView]   `json:"acls"`
	Quotas securityPart[quotaView] `json:"quotas"`
}

func (c *Console) security(ctx context.Context, _ *http.Request, cl *kgo.Client) (any, error) {
	var v securityView
	v.ACLs.Items = []aclView{}
	acls, err := describeAllACLs(ctx, cl)
	switch {
	case errors.Is(err, kerr.SecurityDisabled):
		v.ACLs.Disabled = true
	case err != nil:
		v.ACLs.Error = err.Error()
	default:
		v.ACLs.Items = acls
	}
	v.Quotas.Items = []quotaView{}
	if quotas, err := describeAllQuotas(ctx, cl); err != nil {
		v.Quotas.Error = err.Error()
	} else {
		v.Quotas.Items = quotas
	}
	return v, nil
}

// describeAllACLs lists every ACL the visitor may describe, sorted.
func describeAllACLs(ctx context.Context, cl *kgo.Client) ([]aclView, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe ACLs: %w", err)
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := []aclView{}
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			out = append(out, aclView{
				Principal: a.Principal, Host: a.Host,
				ResourceType: r.ResourceType.String(), Resource: r.ResourceName,
				PatternType: r.ResourcePatternType.String(),
				Operation:   a.Operation.String(), Permission: a.PermissionType.String(),
			})
		}
	}
	slices.SortFunc(out, func(a, b aclView) int {
		return strings.Compare(a.ResourceType+"\x00"+a.Resource+"\x00"+a.Principal+"\x00"+a.Operation,
			b.ResourceType+"\x00"+b.Resource+"\x00"+b.Principal+"\x00"+b.Operation)
	})
	return out, nil
}

// describeAllQuotas lists every client quota (no filter component, not
// strict: all entities), sorted by entity.
func describeAllQuotas(ctx context.Context, cl *kgo.Client) ([]quotaView, error) {
	req := kmsg.NewPtrDescribeClientQuotasRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe client quotas: %w", err)
	}
	if err := responseError(resp.ErrorCode, resp.ErrorMessage); err != nil {
		return nil, err
	}
	out := []quotaView{}
	for _, e := range resp.Entries {
		parts := make([]string, 0, len(e.Entity))
		for _, p := range e.Entity {
			name := "<default>"
			if p.Name != nil {
				name = *p.Name
			}
			parts = append(parts, p.Type+"="+name)
		}
		slices.Sort(parts)
		q := quotaView{Entity: strings.Join(parts, ","), Values: map[string]float64{}}
		for _, v := range e.Values {
			q.Values[v.Key] = v.Value
		}
		out = append(out, q)
	}
	slices.SortFunc(out, func(a, b quotaView) int { return strings.Compare(a.Entity, b.Entity) })
	return out, nil
}

// responseError is a response's top-level error with the broker's message,
// nil for none.
func responseError(code int16, msg *string) error {
	err := kerr.ErrorForCode(code)
	if err != nil && msg != nil && *msg != "" {
		return fmt.Errorf("%w: %s", err, *msg)
	}
	return err
}
