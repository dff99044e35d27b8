package acl

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The sets of Kafka's AclEntry.supportedOperations, in code order.
func TestSupportedOperations(t *testing.T) {
	for rt, want := range map[kmsg.ACLResourceType]string{
		kmsg.ACLResourceTypeTopic:           "READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS",
		kmsg.ACLResourceTypeGroup:           "READ DELETE DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS",
		kmsg.ACLResourceTypeCluster:         "CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE",
		kmsg.ACLResourceTypeTransactionalId: "WRITE DESCRIBE",
		kmsg.ACLResourceTypeDelegationToken: "DESCRIBE",
		kmsg.ACLResourceTypeUser:            "CREATE_TOKENS DESCRIBE_TOKENS",
		kmsg.ACLResourceTypeAny:             "",
		kmsg.ACLResourceTypeUnknown:         "",
	} {
		ops := SupportedOperations(rt)
		var names []string
		for _, op := range ops {
			names = append(names, op.String())
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("%s: %s, want %s", rt, got, want)
		}
		if !slices.IsSorted(ops) {
			t.Errorf("%s: %v not in code order", rt, ops)
		}
	}
}

func TestOperationsBitField(t *testing.T) {
	if got := OperationsBitField(nil); got != 0 {
		t.Errorf("no operations: %b", got)
	}
	// Kafka without an authorizer answers a group's as 3400: READ (3),
	// DELETE (6), DESCRIBE (8), DESCRIBE_CONFIGS (10), ALTER_CONFIGS (11).
	if got := OperationsBitField(SupportedOperations(kmsg.ACLResourceTypeGroup)); got != 1<<3|1<<6|1<<8|1<<10|1<<11 {
		t.Errorf("group: %b", got)
	}
}
