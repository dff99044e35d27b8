package acl

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
)

// Binding is one ACL (Kafka's AclBinding): a resource pattern (type, name,
// pattern type) and an access control entry (principal, host, operation,
// permission). It is comparable, so two equal bindings are one ACL.
type Binding struct {
	ResourceType kmsg.ACLResourceType
	ResourceName string
	// PatternType is LITERAL or PREFIXED in a stored binding.
	PatternType kmsg.ACLResourcePatternType
	// Principal is "Type:name", "User:*" for every principal.
	Principal string
	// Host is an address or "*" for every host.
	Host       string
	Operation  kmsg.ACLOperation
	Permission kmsg.ACLPermissionType
}

// Wildcards Kafka gives a meaning to in bindings.
const (
	WildcardResource  = "*"
	WildcardPrincipal = "User:*"
	WildcardHost      = "*"
)

func (b Binding) String() string {
	return fmt.Sprintf("(resource=%s:%s:%s, principal=%s, host=%s, operation=%s, permission=%s)",
		b.ResourceType, b.PatternType, b.ResourceName, b.Principal, b.Host, b.Operation, b.Permission)
}

// Validate checks a binding as Kafka does before storing it
// (AclControlManager.validateNewAcl, and the broker's checks of the
// principal and the cluster's name). The error's text is what CreateAcls
// answers with INVALID_REQUEST.
func (b Binding) Validate() error {
	switch b.ResourceType {
	case kmsg.ACLResourceTypeUnknown, kmsg.ACLResourceTypeAny:
		return fmt.Errorf("invalid resource type %s", b.ResourceType)
	}
	if b.ResourceType < kmsg.ACLResourceTypeUnknown || b.ResourceType > kmsg.ACLResourceTypeUser {
		return fmt.Errorf("invalid resource type %d", int8(b.ResourceType))
	}
	switch b.PatternType {
	case kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed:
	default:
		return fmt.Errorf("invalid pattern type %s", b.PatternType)
	}
	if b.Operation <= kmsg.ACLOperationAny || b.Operation > kmsg.ACLOperationDescribeTokens {
		return fmt.Errorf("invalid operation %s", b.Operation)
	}
	switch b.Permission {
	case kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny:
	default:
		return fmt.Errorf("invalid permission type %s", b.Permission)
	}
	if b.ResourceName == "" {
		return fmt.Errorf("resource name should not be empty")
	}
	if b.ResourceType == kmsg.ACLResourceTypeCluster && b.ResourceName != ClusterName {
		return fmt.Errorf("the only valid name for the CLUSTER resource is %s", ClusterName)
	}
	if _, err := ParsePrincipal(b.Principal); err != nil {
		return err
	}
	return nil
}

// ParsePrincipal parses "Type:name" as Kafka's SecurityUtils.parseKafkaPrincipal:
// the first colon separates the type from the name.
func ParsePrincipal(s string) (auth.Principal, error) {
	typ, name, ok := strings.Cut(s, ":")
	if s == "" || !ok {
		return auth.Principal{}, fmt.Errorf("expected a principal in the form Type:name, got %q", s)
	}
	return auth.Principal{Type: typ, Name: name}, nil
}

// Filter selects bindings, as DescribeAcls and DeleteAcls send it (Kafka's
// AclBindingFilter). ANY, and a nil string, match every value.
type Filter struct {
	ResourceType kmsg.ACLResourceType
	ResourceName *string
	// PatternType ANY matches every pattern whose name equals ResourceName;
	// MATCH matches the stored patterns that would apply to a resource named
	// ResourceName (the same literal, the literal "*", or a prefix of it);
	// LITERAL and PREFIXED match that pattern type with an equal name.
	PatternType kmsg.ACLResourcePatternType
	Principal   *string
	Host        *string
	Operation   kmsg.ACLOperation
	Permission  kmsg.ACLPermissionType
}

// AnyFilter matches every binding.
var AnyFilter = Filter{
	ResourceType: kmsg.ACLResourceTypeAny, PatternType: kmsg.ACLResourcePatternTypeAny,
	Operation: kmsg.ACLOperationAny, Permission: kmsg.ACLPermissionTypeAny,
}

// Validate refuses a filter with an UNKNOWN element (Kafka's
// AclControlManager.validateFilter): it would match nothing, which a client
// deleting ACLs would not have meant.
func (f Filter) Validate() error {
	switch {
	case f.ResourceType == kmsg.ACLResourceTypeUnknown || f.ResourceType > kmsg.ACLResourceTypeUser:
		return fmt.Errorf("unknown resource type %s in filter", f.ResourceType)
	case f.PatternType == kmsg.ACLResourcePatternTypeUnknown || f.PatternType > kmsg.ACLResourcePatternTypePrefixed:
		return fmt.Errorf("unknown pattern type %s in filter", f.PatternType)
	case f.Operation == kmsg.ACLOperationUnknown || f.Operation > kmsg.ACLOperationDescribeTokens:
		return fmt.Errorf("unknown operation %s in filter", f.Operation)
	case f.Permission == kmsg.ACLPermissionTypeUnknown || f.Permission > kmsg.ACLPermissionTypeAllow:
		return fmt.Errorf("unknown permission type %s in filter", f.Permission)
	}
	return nil
}

// Matches says whether the filter selects b (Kafka's
// ResourcePatternFilter.matches and AccessControlEntryFilter.matches). The
// entry's fields compare exactly: a filter for principal User:alice does
// not select a binding for User:*.
func (f Filter) Matches(b Binding) bool {
	return f.matchesPattern(b) &&
		(f.Principal == nil || *f.Principal == b.Principal) &&
		(f.Host == nil || *f.Host == b.Host) &&
		(f.Operation == kmsg.ACLOperationAny || f.Operation == b.Operation) &&
		(f.Permission == kmsg.ACLPermissionTypeAny || f.Permission == b.Permission)
}

func (f Filter) matchesPattern(b Binding) bool {
	if f.ResourceType != kmsg.ACLResourceTypeAny && f.ResourceType != b.ResourceType {
		return false
	}
	switch f.PatternType {
	case kmsg.ACLResourcePatternTypeAny, kmsg.ACLResourcePatternTypeMatch:
	default:
		if f.PatternType != b.PatternType {
			return false
		}
	}
	if f.ResourceName == nil {
		return true
	}
	name := *f.ResourceName
	if f.PatternType != kmsg.ACLResourcePatternTypeMatch {
		return name == b.ResourceName
	}
	return patternApplies(b.PatternType, b.ResourceName, name)
}

// patternApplies says whether a stored pattern applies to a resource name.
func patternApplies(pattern kmsg.ACLResourcePatternType, patternName, name string) bool {
	switch pattern {
	case kmsg.ACLResourcePatternTypeLiteral:
		return patternName == name || patternName == WildcardResource
	case kmsg.ACLResourcePatternTypePrefixed:
		return strings.HasPrefix(name, patternName)
	}
	return false
}
