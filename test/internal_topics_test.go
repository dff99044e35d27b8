//go:build e2e

package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// findCoordinator asks broker addr for the coordinator of key (keyType 0 a
// group, 1 a transactional id) and returns its error code and message.
func findCoordinator(addr string, keyType int8, key string) (int16, string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, "", err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.Version = 3 // one key: the error and its message at the top level
	req.CoordinatorType, req.CoordinatorKey = keyType, key
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return 0, "", err
	}
	msg := ""
	if resp.ErrorMessage != nil {
		msg = *resp.ErrorMessage
	}
	return resp.ErrorCode, msg, nil
}

// internalTopicReplicas returns each partition's replicas of topic as
// broker addr's Metadata answers (nil: no such topic).
func internalTopicReplicas(addr, topic string) (map[int32][]int32, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	md, err := kadm.NewClient(cl).Metadata(ctx, topic)
	if err != nil {
		return nil, err
	}
	td := md.Topics[topic]
	if td.Err == kerr.UnknownTopicOrPartition {
		return nil, nil
	}
	if td.Err != nil {
		return nil, td.Err
	}
	out := map[int32][]int32{}
	for _, p := range td.Partitions {
		out[p.Partition] = p.Replicas
	}
	return out, nil
}

// TestInternalTopicsWaitForReplicationFactor: with
// offsets.topic.replication.factor at its default of 3 and only two of the
// three brokers ever started, FindCoordinator answers
// COORDINATOR_NOT_AVAILABLE (saying why) and __consumer_offsets is not
// created with fewer replicas; once the third broker registers, it is
// created with 3. A registered broker that is down still counts, as in
// Kafka's placement: __transaction_state is then created with 3 replicas,
// one of them the stopped broker.
func TestInternalTopicsWaitForReplicationFactor(t *testing.T) {
	c := startCluster(t, 1, 2, "offsets.topic.num.partitions=3", "transaction.state.log.num.partitions=3")
	third := &node{t: t, id: 103, roles: "broker", dataDir: t.TempDir(), port: freePort(t)}
	c.configure(third)
	c.format(third)

	// Two brokers of three: every answer is COORDINATOR_NOT_AVAILABLE and
	// the topic stays uncreated, for longer than the clients' retries.
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		for _, b := range c.brokers {
			code, msg, err := findCoordinator(b.addr(), 0, "g")
			if err != nil {
				t.Fatal(err)
			}
			if code != kerr.CoordinatorNotAvailable.Code || !strings.Contains(msg, "offsets.topic.replication.factor") {
				t.Fatalf("broker %d answered %v %q with 2 of 3 brokers registered:\n%s", b.id, kerr.ErrorForCode(code), msg, c.logs())
			}
		}
	}
	for _, b := range c.brokers {
		if r, err := internalTopicReplicas(b.addr(), "__consumer_offsets"); err != nil || r != nil {
			t.Fatalf("broker %d: __consumer_offsets %v (%v), want none yet", b.id, r, err)
		}
	}

	c.brokers = append(c.brokers, third)
	third.start()
	c.waitBrokers(3)
	c.eventually("a group coordinator", 30*time.Second, func() error {
		code, msg, err := findCoordinator(c.brokers[0].addr(), 0, "g")
		if err == nil && code != 0 {
			err = fmt.Errorf("%v %s", kerr.ErrorForCode(code), msg)
		}
		return err
	})
	checkRF := func(topic string, want int) []int32 {
		t.Helper()
		r, err := internalTopicReplicas(c.brokers[0].addr(), topic)
		if err != nil || len(r) != 3 {
			t.Fatalf("%s: %v (%v), want 3 partitions", topic, r, err)
		}
		var all []int32
		for p, replicas := range r {
			if len(replicas) != want {
				t.Errorf("%s-%d: replicas %v, want %d", topic, p, replicas, want)
			}
			all = append(all, replicas...)
		}
		return all
	}
	checkRF("__consumer_offsets", 3)

	// The third broker stops: it stays registered (fenced), so
	// __transaction_state does not wait for it and has it as a replica.
	third.stop()
	c.waitBrokers(2)
	c.eventually("a transaction coordinator with broker 103 down", 30*time.Second, func() error {
		code, msg, err := findCoordinator(c.brokers[0].addr(), 1, "tx")
		if err == nil && code != 0 {
			err = fmt.Errorf("%v %s", kerr.ErrorForCode(code), msg)
		}
		return err
	})
	if all := checkRF("__transaction_state", 3); !slices.Contains(all, third.id) {
		t.Errorf("__transaction_state has no replica on the stopped broker 103")
	}
}
