package txn

import (
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeTransaction answers one transactional id of DescribeTransactions
// (Kafka's handleDescribeTransactions). The partitions are those still to
// be marked while a transaction completes. Filtering topics the caller may
// not describe is the handler's.
func (s *Shard) DescribeTransaction(transactionalID string) kmsg.DescribeTransactionsResponseTransactionState {
	d := kmsg.NewDescribeTransactionsResponseTransactionState()
	d.TransactionalID = transactionalID
	if transactionalID == "" {
		d.ErrorCode = kerr.InvalidRequest.Code
		return d
	}
	t := s.txns[transactionalID]
	if t == nil || t.state == Dead {
		d.ErrorCode = kerr.TransactionalIDNotFound.Code
		return d
	}
	d.State, d.TimeoutMillis, d.StartTimestamp = t.state.String(), t.timeoutMs, t.startTs
	d.ProducerID, d.ProducerEpoch = t.producerID, t.producerEpoch
	for _, tp := range t.sortedPartitions() {
		if n := len(d.Topics); n == 0 || d.Topics[n-1].Topic != tp.Topic {
			topic := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
			topic.Topic = tp.Topic
			d.Topics = append(d.Topics, topic)
		}
		last := &d.Topics[len(d.Topics)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return d
}

// ListTransactions lists this shard's transactional ids that pass the
// request's filters (Kafka's listTransactionStates): states by name,
// producer ids, transactions running longer than DurationFilterMillis (v1),
// and transactional ids matching TransactionalIDPattern (v2, a full
// match). unknownStates are the state filters that name no state; their
// presence filters nothing in. errCode is INVALID_REGULAR_EXPRESSION for a
// pattern that does not compile. The handler merges the shards' answers.
func (s *Shard) ListTransactions(now int64, req *kmsg.ListTransactionsRequest) (states []kmsg.ListTransactionsResponseTransactionState, unknownStates []string, errCode int16) {
	wantStates := map[State]bool{}
	for _, name := range req.StateFilters {
		if st, ok := ParseState(name); ok {
			wantStates[st] = true
		} else {
			unknownStates = append(unknownStates, name)
		}
	}
	wantPIDs := map[int64]bool{}
	for _, pid := range req.ProducerIDFilters {
		wantPIDs[pid] = true
	}
	var pattern *regexp.Regexp
	if req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		p, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			return nil, unknownStates, kerr.InvalidRegularExpression.Code
		}
		pattern = p
	}
	for _, id := range s.sortedIDs() {
		t := s.txns[id]
		switch {
		case t.state == Dead: // being expired
		case len(req.ProducerIDFilters) > 0 && !wantPIDs[t.producerID]:
		case len(req.StateFilters) > 0 && !wantStates[t.state]:
		case req.DurationFilterMillis >= 0 && now-t.startTs <= req.DurationFilterMillis:
		case pattern != nil && !pattern.MatchString(id):
		default:
			st := kmsg.NewListTransactionsResponseTransactionState()
			st.TransactionalID, st.ProducerID, st.TransactionState = id, t.producerID, t.state.String()
			states = append(states, st)
		}
	}
	return states, unknownStates, 0
}
