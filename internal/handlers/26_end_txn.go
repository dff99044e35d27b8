package handlers

// EndTxn (key 26), v0-5: commit or abort the producer's transaction. The
// coordinator writes PrepareCommit / PrepareAbort, answers, and sends the
// markers to the partitions' leaders in the background; the transaction is
// complete once every partition is marked. v5 is transaction version 2
// (KIP-890 part 2): the answer carries the producer's next epoch.
//
// Needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
// as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var endTxnAPI = api{key: 26, min: 0, max: 5, handle: (*Handlers).endTxn}

func (h *Handlers) endTxn(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.EndTxnRequest)
	resp := r.ResponseKind().(*kmsg.EndTxnResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID) {
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	}
	var o txn.Outcome
	if code := h.onTxnShard(ctx, r.TransactionalID, func(c txn.Coordinated, w *coordinator.Writer) {
		o = c.Run(w, c.EndTxn(nowMs(), r))
	}); code != 0 {
		o.ErrorCode = code
	}
	resp.ErrorCode = o.ErrorCode
	if o.ErrorCode == 0 {
		resp.ProducerID, resp.ProducerEpoch = o.ProducerID, o.ProducerEpoch
	}
	return resp, nil
}
