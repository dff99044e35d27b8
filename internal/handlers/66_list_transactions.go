package handlers

// ListTransactions (key 66), v0-2: the transactional ids of every
// __transaction_state partition this broker coordinates, filtered by
// state, producer id, duration (v1) and id pattern (v2). Admin clients ask
// every broker and merge. While a partition loads the answer is
// COORDINATOR_LOAD_IN_PROGRESS, as Kafka's.
//
// Lists only the transactional ids with DESCRIBE (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var listTransactionsAPI = api{key: 66, min: 0, max: 2, handle: (*Handlers).listTransactions}

func (h *Handlers) listTransactions(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListTransactionsRequest)
	resp := r.ResponseKind().(*kmsg.ListTransactionsResponse)
	if h.d.Txns == nil {
		resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
		return resp, nil
	}
	partitions, loading := h.d.Txns.Partitions()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		return resp, nil
	}
	unknown := map[string]bool{}
	for _, p := range partitions {
		err := h.d.Txns.Do(ctx, p, func(s coordinator.Shard, _ *coordinator.Writer) {
			states, unknownStates, code := s.(txn.Coordinated).ListTransactions(nowMs(), r)
			if code != 0 && resp.ErrorCode == 0 {
				resp.ErrorCode = code
			}
			for _, st := range states {
				if h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTransactionalId, st.TransactionalID) {
					resp.TransactionStates = append(resp.TransactionStates, st)
				}
			}
			for _, u := range unknownStates {
				unknown[u] = true
			}
		})
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		// A partition unloaded meanwhile is no longer this broker's.
	}
	if resp.ErrorCode != 0 {
		resp.TransactionStates = nil
	}
	for _, u := range r.StateFilters {
		if unknown[u] {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, u)
			delete(unknown, u)
		}
	}
	return resp, nil
}
