package handlers

// AddOffsetsToTxn (key 25), v0-4: a transactional producer that will
// commit a group's offsets in its transaction (sendOffsetsToTransaction)
// adds the group's __consumer_offsets partition to the transaction, so the
// markers reach the group coordinator.
//
// Needs WRITE on the transactional id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
// and READ on the group (GROUP_AUTHORIZATION_FAILED), as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var addOffsetsToTxnAPI = api{key: 25, min: 0, max: 4, handle: (*Handlers).addOffsetsToTxn}

func (h *Handlers) addOffsetsToTxn(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, r.TransactionalID):
		resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		return resp, nil
	case !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.Group):
		resp.ErrorCode = kerr.GroupAuthorizationFailed.Code
		return resp, nil
	}
	var code int16
	if failed := h.onTxnShard(ctx, r.TransactionalID, func(c txn.Coordinated, w *coordinator.Writer) {
		code = c.Run(w, c.AddOffsets(nowMs(), r)).ErrorCode
	}); failed != 0 {
		code = failed
	}
	resp.ErrorCode = code
	return resp, nil
}
