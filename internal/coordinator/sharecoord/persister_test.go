package sharecoord

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/sharestate"
)

// scriptedPeers answers each request with the next of its answers: a
// response builder's error code and message, or a transport error.
type scriptedPeers struct {
	answers []func(req kmsg.Request) (kmsg.Response, error)
	calls   int
}

func (p *scriptedPeers) Request(_ context.Context, _ int32, req kmsg.Request) (kmsg.Response, error) {
	a := p.answers[min(p.calls, len(p.answers)-1)]
	p.calls++
	return a(req)
}

// answer is a response to a Write or Read of one share-partition with the
// given code and message.
func answer(code int16, msg string) func(kmsg.Request) (kmsg.Response, error) {
	return func(req kmsg.Request) (kmsg.Response, error) {
		var m *string
		if msg != "" {
			m = &msg
		}
		switch r := req.(type) {
		case *kmsg.WriteShareGroupStateRequest:
			resp := r.ResponseKind().(*kmsg.WriteShareGroupStateResponse)
			resp.Topics = []kmsg.WriteShareGroupStateResponseTopic{{TopicID: r.Topics[0].TopicID,
				Partitions: []kmsg.WriteShareGroupStateResponseTopicPartition{{Partition: r.Topics[0].Partitions[0].Partition, ErrorCode: code, ErrorMessage: m}}}}
			return resp, nil
		case *kmsg.ReadShareGroupStateRequest:
			resp := r.ResponseKind().(*kmsg.ReadShareGroupStateResponse)
			resp.Topics = []kmsg.ReadShareGroupStateResponseTopic{{TopicID: r.Topics[0].TopicID,
				Partitions: []kmsg.ReadShareGroupStateResponseTopicPartition{{Partition: r.Topics[0].Partitions[0].Partition, ErrorCode: code, ErrorMessage: m, StateEpoch: 3, StartOffset: 7,
					StateBatches: []kmsg.ReadShareGroupStateResponseTopicPartitionStateBatch{{FirstOffset: 7, LastOffset: 9, DeliveryState: 2, DeliveryCount: 1}}}}}}
			return resp, nil
		}
		return nil, errors.New("unexpected request")
	}
}

func transportError(kmsg.Request) (kmsg.Response, error) {
	return nil, errors.New("connection refused")
}

func testPersister(coordinatorErrs int, peers *scriptedPeers) (*Persister, *int) {
	lookups := 0
	return NewPersister(PersisterConfig{
		NodeID: 1,
		Coordinator: func(context.Context, string) (int32, error) {
			lookups++
			if lookups <= coordinatorErrs {
				return -1, kerr.CoordinatorNotAvailable
			}
			return 2, nil
		},
		Peers:        peers,
		RetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
	}), &lookups
}

var testKey = sharestate.Key{GroupID: "g", TopicID: [16]byte{1}, Partition: 3}

// TestPersisterRetries: no coordinator yet, an unreachable one, one still
// loading and one that moved are all retried; the write then succeeds.
func TestPersisterRetries(t *testing.T) {
	peers := &scriptedPeers{answers: []func(kmsg.Request) (kmsg.Response, error){
		transportError,
		answer(kerr.CoordinatorLoadInProgress.Code, ""),
		answer(kerr.NotCoordinator.Code, ""),
		answer(0, ""),
	}}
	p, lookups := testPersister(2, peers)
	if err := p.Write(context.Background(), testKey, sharestate.Update{StateEpoch: 1, LeaderEpoch: 1, StartOffset: -1, DeliveryCompleteCount: -1}); err != nil {
		t.Fatal(err)
	}
	if peers.calls != 4 || *lookups != 6 {
		t.Fatalf("%d requests and %d coordinator lookups, want 4 and 6", peers.calls, *lookups)
	}
}

// TestPersisterAnswers: the coordinator's errors come back as Kafka's, an
// uninitialized share-partition also as the contract's
// UNKNOWN_TOPIC_OR_PARTITION; a read's state is decoded.
func TestPersisterAnswers(t *testing.T) {
	ctx := context.Background()
	peers := &scriptedPeers{answers: []func(kmsg.Request) (kmsg.Response, error){answer(kerr.FencedStateEpoch.Code, "older")}}
	p, _ := testPersister(0, peers)
	if err := p.Write(ctx, testKey, sharestate.Update{}); !errors.Is(err, kerr.FencedStateEpoch) || peers.calls != 1 {
		t.Fatalf("fenced write: %v after %d requests, want FENCED_STATE_EPOCH at once", err, peers.calls)
	}

	peers = &scriptedPeers{answers: []func(kmsg.Request) (kmsg.Response, error){answer(kerr.InvalidRequest.Code, uninitializedMessage(opRead))}}
	p, _ = testPersister(0, peers)
	_, err := p.Read(ctx, testKey, 1)
	var ke *kerr.Error
	if !errors.Is(err, kerr.UnknownTopicOrPartition) || !errors.As(err, &ke) || ke != kerr.InvalidRequest {
		t.Fatalf("read of an uninitialized share-partition: %v", err)
	}

	peers = &scriptedPeers{answers: []func(kmsg.Request) (kmsg.Response, error){answer(0, "")}}
	p, _ = testPersister(0, peers)
	st, err := p.Read(ctx, testKey, 4)
	want := sharestate.State{StateEpoch: 3, LeaderEpoch: 4, StartOffset: 7, DeliveryCompleteCount: -1,
		Batches: []sharestate.Batch{{FirstOffset: 7, LastOffset: 9, DeliveryState: sharestate.Acknowledged, DeliveryCount: 1}}}
	if err != nil || st.StateEpoch != want.StateEpoch || st.LeaderEpoch != want.LeaderEpoch || st.StartOffset != want.StartOffset || len(st.Batches) != 1 || st.Batches[0] != want.Batches[0] {
		t.Fatalf("read: %+v %v, want %+v", st, err, want)
	}

	if err := p.Write(ctx, sharestate.Key{TopicID: [16]byte{1}}, sharestate.Update{}); !errors.Is(err, kerr.InvalidRequest) {
		t.Fatalf("write without a group id: %v", err)
	}
}

// TestPersisterGivesUp: a coordinator that never becomes available is
// retried until the context ends; the error says both.
func TestPersisterGivesUp(t *testing.T) {
	peers := &scriptedPeers{answers: []func(kmsg.Request) (kmsg.Response, error){answer(kerr.NotCoordinator.Code, "")}}
	p, _ := testPersister(0, peers)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Write(ctx, testKey, sharestate.Update{})
	if !errors.Is(err, kerr.NotCoordinator) || !errors.Is(err, context.DeadlineExceeded) || peers.calls < 2 {
		t.Fatalf("%v after %d requests", err, peers.calls)
	}
}
