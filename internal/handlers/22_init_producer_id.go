package handlers

// InitProducerId (key 22), v0-5 (v0 is Kafka 4.0's floor; v2 is flexible;
// v3 adds the producer id and epoch of KIP-360; v4 and v5 change only
// transactional answers). Without a transactional id, as Kafka's
// TransactionCoordinator.handleInitProducerId: a fresh producer id from the
// broker's block (package producerid) with epoch 0, whatever producer id and
// epoch the request carries; an idempotent producer bumps its epoch itself
// (KIP-360). A producer id given without an epoch, or the reverse, is
// INVALID_REQUEST (Kafka's KafkaApis check). With no id left until the next
// block arrives the answer is COORDINATOR_LOAD_IN_PROGRESS, which clients
// retry.
//
// With a transactional id, the transaction coordinator of that id answers
// (package txn): a new producer id or a bumped epoch, an ongoing
// transaction fenced and aborted first (CONCURRENT_TRANSACTIONS until it
// is), PRODUCER_FENCED for a KIP-360 producer that is no longer current.
// Errors carry producer id -1 and epoch -1, as Kafka's initTransactionError.
//
// Authorization (Kafka's): a transactional id needs WRITE on it
// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
// IDEMPOTENT_WRITE on the cluster or WRITE on some topic (KIP-679), else
// CLUSTER_AUTHORIZATION_FAILED.

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/txn"
	"gregor/internal/network"
)

var initProducerIDAPI = api{key: 22, min: 0, max: 5, handle: (*Handlers).initProducerID}

func (h *Handlers) initProducerID(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.InitProducerIDRequest)
	resp := r.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if (r.ProducerID == -1) != (r.ProducerEpoch == -1) {
		resp.ErrorCode = kerr.InvalidRequest.Code
		return resp, nil
	}
	if r.TransactionalID != nil {
		switch {
		case *r.TransactionalID == "":
			resp.ErrorCode = kerr.InvalidRequest.Code
		case !h.authorized(ctx, req, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTransactionalId, *r.TransactionalID):
			resp.ErrorCode = kerr.TransactionalIDAuthorizationFailed.Code
		case r.TransactionTimeoutMillis <= 0 || int64(r.TransactionTimeoutMillis) > h.transactionMaxTimeoutMs():
			resp.ErrorCode = kerr.InvalidTransactionTimeout.Code
		default:
			var o txn.Outcome
			if code := h.onTxnShard(ctx, *r.TransactionalID, func(c txn.Coordinated, w *coordinator.Writer) {
				o = c.Run(w, c.InitProducerID(nowMs(), r))
			}); code != 0 {
				o.ErrorCode = code
			}
			resp.ErrorCode, resp.ProducerID, resp.ProducerEpoch = o.ErrorCode, o.ProducerID, o.ProducerEpoch
			if resp.ErrorCode != 0 {
				resp.ProducerID, resp.ProducerEpoch = -1, -1
			}
		}
		return resp, nil
	}
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationIdempotentWrite) && !h.authorizedAnyTopic(ctx, req, kmsg.ACLOperationWrite) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	id, err := h.d.ProducerIDs.Generate()
	if err != nil {
		h.d.Logger.Debug("init producer id", "client", req.ClientAddr, "err", err)
		if !errors.Is(err, kerr.CoordinatorLoadInProgress) {
			err = kerr.UnknownServerError
		}
		resp.ErrorCode = errorCode(err)
		return resp, nil
	}
	resp.ProducerID, resp.ProducerEpoch = id, 0
	return resp, nil
}

// transactionMaxTimeoutMs is transaction.max.timeout.ms (Kafka's default
// without a broker config).
func (h *Handlers) transactionMaxTimeoutMs() int64 {
	if h.d.Broker != nil && h.d.Broker.TransactionMaxTimeoutMs > 0 {
		return h.d.Broker.TransactionMaxTimeoutMs
	}
	return 900000
}
