package handlers

// AddOffsetsToTxn (key 25), v0-4: a transactional producer that will
// commit a group's offsets in its transaction (sendOffsetsToTransaction)
// adds the group's __consumer_offsets partition to the transaction, so the
// markers reach the group coordinator.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var addOffsetsToTxnAPI = api{key: 25, min: 0, max: 4, handle: (*Handlers).addOffsetsToTxn}

func (h *Handlers) addOffsetsToTxn(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.AddOffsetsToTxnRequest)
	resp := r.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	var code int16
	if failed := h.onTxnShard(ctx, r.TransactionalID, func(c txn.Coordinated, w *coordinator.Writer) {
		code = c.Run(w, c.AddOffsets(nowMs(), r)).ErrorCode
	}); failed != 0 {
		code = failed
	}
	resp.ErrorCode = code
	return resp, nil
}
