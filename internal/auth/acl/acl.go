// Package acl is Kafka's authorization model: ACL bindings (a resource
// pattern and an access control entry) and the Authorizer every request is
// checked against. The enums are kmsg's, which are Kafka's wire codes.
package acl

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
)

// Authorizer decides whether a principal connected from host may do op on
// a resource (a resource type and name; the cluster's name is
// "kafka-cluster").
type Authorizer interface {
	Authorize(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool
}

// ClusterName is the name of the one CLUSTER resource.
const ClusterName = "kafka-cluster"
