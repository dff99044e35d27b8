package acl

import "github.com/twmb/franz-go/pkg/kmsg"

// Operations Kafka supports on each resource type (AclEntry.supportedOperations),
// in the order of their codes.
var (
	topicOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete,
		kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe, kmsg.ACLOperationDescribeConfigs,
		kmsg.ACLOperationAlterConfigs,
	}
	groupOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationRead, kmsg.ACLOperationDelete, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
	}
	clusterOperations = []kmsg.ACLOperation{
		kmsg.ACLOperationCreate, kmsg.ACLOperationAlter, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationClusterAction, kmsg.ACLOperationDescribeConfigs, kmsg.ACLOperationAlterConfigs,
		kmsg.ACLOperationIdempotentWrite,
	}
	transactionalIDOperations = []kmsg.ACLOperation{kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe}
	delegationTokenOperations = []kmsg.ACLOperation{kmsg.ACLOperationDescribe}
	userOperations            = []kmsg.ACLOperation{kmsg.ACLOperationCreateTokens, kmsg.ACLOperationDescribeTokens}
)

// SupportedOperations are the operations that mean something on a resource
// of type rt, as Kafka's AclEntry.supportedOperations lists them: the set a
// response's authorized operations (KIP-430) are drawn from. It is nil for
// ANY, UNKNOWN and types Kafka does not know. The slice is shared: do not
// change it.
func SupportedOperations(rt kmsg.ACLResourceType) []kmsg.ACLOperation {
	switch rt {
	case kmsg.ACLResourceTypeTopic:
		return topicOperations
	case kmsg.ACLResourceTypeGroup:
		return groupOperations
	case kmsg.ACLResourceTypeCluster:
		return clusterOperations
	case kmsg.ACLResourceTypeTransactionalId:
		return transactionalIDOperations
	case kmsg.ACLResourceTypeDelegationToken:
		return delegationTokenOperations
	case kmsg.ACLResourceTypeUser:
		return userOperations
	}
	return nil
}

// OperationsBitField is the wire form of a set of operations: bit 1<<code
// for each (Kafka's Utils.to32BitField), as the authorized operations
// fields of Metadata, DescribeCluster, DescribeGroups,
// ConsumerGroupDescribe and DescribeTopicPartitions carry it.
func OperationsBitField(ops []kmsg.ACLOperation) int32 {
	var bits int32
	for _, op := range ops {
		bits |= 1 << op
	}
	return bits
}
