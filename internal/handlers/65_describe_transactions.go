package handlers

// DescribeTransactions (key 65), v0: the state of transactional ids this
// broker coordinates (kafka-transactions.sh describe). An id coordinated
// elsewhere answers NOT_COORDINATOR, one never seen (or expired)
// TRANSACTIONAL_ID_NOT_FOUND; the partitions listed are those of the
// ongoing transaction, or those still to be marked while it completes.
//
// Each transactional id needs DESCRIBE, else
// TRANSACTIONAL_ID_AUTHORIZATION_FAILED (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var describeTransactionsAPI = api{key: 65, min: 0, max: 0, handle: (*Handlers).describeTransactions}

func (h *Handlers) describeTransactions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	for _, id := range r.TransactionalIDs {
		var d kmsg.DescribeTransactionsResponseTransactionState
		if id == "" {
			d = kmsg.NewDescribeTransactionsResponseTransactionState()
			d.TransactionalID, d.ErrorCode = id, kerr.InvalidRequest.Code
		} else if !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, id) {
			d = kmsg.NewDescribeTransactionsResponseTransactionState()
			d.TransactionalID, d.ErrorCode = id, kerr.TransactionalIDAuthorizationFailed.Code
		} else if code := h.onTxnShard(ctx, id, func(c txn.Coordinated, _ *coordinator.Writer) {
			d = c.DescribeTransaction(id)
		}); code != 0 {
			d = kmsg.NewDescribeTransactionsResponseTransactionState()
			d.TransactionalID, d.ErrorCode = id, code
		}
		resp.TransactionStates = append(resp.TransactionStates, d)
	}
	return resp, nil
}
