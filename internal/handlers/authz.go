package handlers

// Authorization: every request is checked against Deps.Authorizer as
// Kafka's KafkaApis and ControllerApis check it (which operation on which
// resource, and which error an unauthorized part of a request gets). Parts
// of a request are checked one by one: the unauthorized ones are answered
// with the error and the rest is served. With no Authorizer every request
// is allowed, as in Kafka without authorizer.class.name.
//
// Admin requests a broker forwards to the active controller are authorized
// on that broker, which knows the client's principal (Gregor has no
// Envelope to carry it). The controller then trusts them: on the local
// path they carry forwardedContext, on a remote one they come from a
// broker, whose principal holds CLUSTER_ACTION on the cluster (as Kafka
// requires of an Envelope's sender).

import (
	"context"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/auth/acl"
	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

type forwardedKey struct{}

// Forwarded marks ctx as carrying a request this node's broker already
// authorized and now hands to its own controller's handlers.
func Forwarded(ctx context.Context) context.Context {
	return context.WithValue(ctx, forwardedKey{}, true)
}

func isForwarded(ctx context.Context) bool {
	v, _ := ctx.Value(forwardedKey{}).(bool)
	return v
}

// clientHost is the host ACLs match: the client's IP address.
func clientHost(req *network.Request) string {
	switch a := req.ClientAddr.(type) {
	case nil:
		return ""
	case *net.TCPAddr:
		return a.IP.String()
	default:
		if host, _, err := net.SplitHostPort(a.String()); err == nil {
			return host
		}
		return a.String()
	}
}

// authorized reports whether req's principal may do op on the resource.
func (h *Handlers) authorized(ctx context.Context, req *network.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if h.d.Authorizer == nil || isForwarded(ctx) {
		return true
	}
	return h.d.Authorizer.Authorize(req.Principal, clientHost(req), op, rt, name)
}

// authorizedCluster reports whether req's principal may do op on the
// cluster.
func (h *Handlers) authorizedCluster(ctx context.Context, req *network.Request, op kmsg.ACLOperation) bool {
	return h.authorized(ctx, req, op, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedOperations is the bit field of the operations req's principal
// may do on a resource, of those Kafka supports on its type (AuthHelper's
// authorizedOperations, KIP-430): each is asked of the authorizer as a
// LITERAL resource; without an authorizer all of them are allowed, as in
// Kafka.
func (h *Handlers) authorizedOperations(ctx context.Context, req *network.Request, rt kmsg.ACLResourceType, name string) int32 {
	var allowed []kmsg.ACLOperation
	for _, op := range acl.SupportedOperations(rt) {
		if h.authorized(ctx, req, op, rt, name) {
			allowed = append(allowed, op)
		}
	}
	return acl.OperationsBitField(allowed)
}

// clusterAuthorizedOperations is the cluster's authorized operations for
// req's principal: 0 without DESCRIBE on the cluster, as Kafka's
// DescribeCluster and Metadata v8-10 answer.
func (h *Handlers) clusterAuthorizedOperations(ctx context.Context, req *network.Request) int32 {
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationDescribe) {
		return 0
	}
	return h.authorizedOperations(ctx, req, kmsg.ACLResourceTypeCluster, acl.ClusterName)
}

// authorizedTopics is the batch form for topics: which of names req's
// principal may do op on, each name asked once (Kafka's
// filterByAuthorized).
func (h *Handlers) authorizedTopics(ctx context.Context, req *network.Request, op kmsg.ACLOperation, names []string) map[string]bool {
	return h.authorizedNames(ctx, req, op, kmsg.ACLResourceTypeTopic, names)
}

func (h *Handlers) authorizedNames(ctx context.Context, req *network.Request, op kmsg.ACLOperation, rt kmsg.ACLResourceType, names []string) map[string]bool {
	ok := make(map[string]bool, len(names))
	for _, n := range names {
		if _, seen := ok[n]; !seen {
			ok[n] = h.authorized(ctx, req, op, rt, n)
		}
	}
	return ok
}

// forwardedAdmin reports whether an admin request reaching a controller
// listener was forwarded by a broker, which authorized it: it comes from
// this node's broker, or from a principal with CLUSTER_ACTION on the
// cluster. Brokers check the client's own permissions themselves.
func (h *Handlers) forwardedAdmin(ctx context.Context, req *network.Request) bool {
	return h.controllerListener && h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction)
}

// resourceTypeAuthorizer is the optional part of an Authorizer that
// answers Kafka's authorizeByResourceType: may the principal do op on at
// least one resource of the type (an ALLOW binding not overridden by a
// DENY)? Kafka accepts it instead of IDEMPOTENT_WRITE on the cluster for
// an idempotent producer's InitProducerId (KIP-679).
type resourceTypeAuthorizer interface {
	AuthorizeByResourceType(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool
}

// authorizedAnyTopic reports whether req's principal may do op on some
// topic. An Authorizer that cannot tell is asked nothing and says no.
func (h *Handlers) authorizedAnyTopic(ctx context.Context, req *network.Request, op kmsg.ACLOperation) bool {
	if h.d.Authorizer == nil || isForwarded(ctx) {
		return true
	}
	a, ok := h.d.Authorizer.(resourceTypeAuthorizer)
	return ok && a.AuthorizeByResourceType(req.Principal, clientHost(req), op, kmsg.ACLResourceTypeTopic)
}

// onAuthorizedGroupShard is onGroupShard for a principal that needs op on
// the group: GROUP_AUTHORIZATION_FAILED without it, and fn is not run.
func (h *Handlers) onAuthorizedGroupShard(ctx context.Context, req *network.Request, op kmsg.ACLOperation, groupID string, fn func(s *group.Shard, w group.Writer)) int16 {
	if !h.authorized(ctx, req, op, kmsg.ACLResourceTypeGroup, groupID) {
		return kerr.GroupAuthorizationFailed.Code
	}
	return h.onGroupShard(ctx, groupID, fn)
}

// authorizedClusterAdmin reports whether req may do op on the cluster: the
// client has it, or, on a controller listener, a broker forwards the
// request (it checked op for its client).
func (h *Handlers) authorizedClusterAdmin(ctx context.Context, req *network.Request, op kmsg.ACLOperation) bool {
	return h.authorizedCluster(ctx, req, op) || h.forwardedAdmin(ctx, req)
}

// nodeToNode reports whether req may be a node-to-node request (a broker's
// registration, heartbeat, ISR change, producer id block, metadata fetch):
// CLUSTER_ACTION on the cluster, as Kafka.
func (h *Handlers) nodeToNode(ctx context.Context, req *network.Request) bool {
	return h.authorizedCluster(ctx, req, kmsg.ACLOperationClusterAction)
}

// trustedAdmin reports whether an admin request that names topics or
// config resources skips the per-resource checks: there is no authorizer,
// or the request comes forwarded from a broker that checked them.
func (h *Handlers) trustedAdmin(ctx context.Context, req *network.Request) bool {
	return h.d.Authorizer == nil || isForwarded(ctx) || h.forwardedAdmin(ctx, req)
}

// duplicates is the set of names given more than once: the controller
// answers them INVALID_REQUEST before any authorization, as Kafka, so the
// handlers leave them in the request.
func duplicates(names []string) map[string]bool {
	seen := make(map[string]bool, len(names))
	dup := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			dup[n] = true
		}
		seen[n] = true
	}
	return dup
}

// configResourceDenied is the error a config resource gets when req's
// principal may not do op (DESCRIBE_CONFIGS or ALTER_CONFIGS) on it, or 0:
// op on the topic for a topic (TOPIC_AUTHORIZATION_FAILED), on the group
// for a group (GROUP_AUTHORIZATION_FAILED), on the cluster for a broker,
// a broker logger or client metrics (CLUSTER_AUTHORIZATION_FAILED), as
// Kafka. Other types are left to the handler, which rejects them.
func (h *Handlers) configResourceDenied(ctx context.Context, req *network.Request, op kmsg.ACLOperation, rt kmsg.ConfigResourceType, name string) int16 {
	switch rt {
	case kmsg.ConfigResourceTypeTopic:
		if !h.authorized(ctx, req, op, kmsg.ACLResourceTypeTopic, name) {
			return kerr.TopicAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeGroupConfig:
		if !h.authorized(ctx, req, op, kmsg.ACLResourceTypeGroup, name) {
			return kerr.GroupAuthorizationFailed.Code
		}
	case kmsg.ConfigResourceTypeBroker, kmsg.ConfigResourceTypeBrokerLogger, kmsg.ConfigResourceTypeClientMetrics:
		if !h.authorizedCluster(ctx, req, op) {
			return kerr.ClusterAuthorizationFailed.Code
		}
	}
	return 0
}

// errorDescription is the message a denied resource is answered with.
func errorDescription(code int16) *string {
	return kmsg.StringPtr(kerr.ErrorForCode(code).(*kerr.Error).Description)
}
