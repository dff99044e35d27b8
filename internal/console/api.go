package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiTimeout bounds one API call: a page that waits longer is worse than
// one that says what failed.
const apiTimeout = 10 * time.Second

// statusError carries the HTTP status of an API failure; other errors are
// the broker's (502).
type statusError struct {
	status int
	err    error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func notFound(format string, args ...any) error {
	return &statusError{http.StatusNotFound, fmt.Errorf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &statusError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

// apiHandler answers one API call, reading the cluster through cl.
type apiHandler func(ctx context.Context, r *http.Request, cl *kgo.Client) (any, error)

// api adapts a handler that returns a value to JSON over HTTP, running it
// with the visitor's client (clientFor); an error becomes
// {"error": "..."} with its status.
func (c *Console) api(h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), apiTimeout)
		defer cancel()
		cl, err := c.clientFor(r)
		var v any
		if err == nil {
			v, err = h(ctx, r, cl)
		}
		c.writeJSON(w, r, v, err)
	}
}

// writeJSON writes v, or err as {"error": "..."} with its status: a
// *statusError's, 503 while the broker listener is not up, else 502 (the
// broker's failure).
func (c *Console) writeJSON(w http.ResponseWriter, r *http.Request, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if err != nil {
		status := http.StatusBadGateway
		var se *statusError
		switch {
		case errors.As(err, &se):
			status = se.status
		case errors.Is(err, errNoBroker):
			status = http.StatusServiceUnavailable
		}
		if status >= 500 {
			c.logger.Warn("console api", "path", r.URL.Path, "err", err)
		}
		w.WriteHeader(status)
		v = map[string]string{"error": err.Error()}
	}
	if err := json.NewEncoder(w).Encode(v); err != nil {
		c.logger.Debug("console api: write answer", "path", r.URL.Path, "err", err)
	}
}

// clusterView is /api/cluster: the brokers as DescribeCluster lists them
// (fenced ones included) and the metadata quorum as DescribeQuorum
// describes it.
type clusterView struct {
	ClusterID    string       `json:"clusterId"`
	ControllerID int32        `json:"controllerId"`
	Brokers      []brokerView `json:"brokers"`
	Quorum       *quorumView  `json:"quorum,omitempty"`
	// QuorumError says why the quorum is missing (e.g. a broker that does
	// not forward DescribeQuorum).
	QuorumError string `json:"quorumError,omitempty"`
}

type brokerView struct {
	ID   int32  `json:"id"`
	Host string `json:"host"`
	Port int32  `json:"port"`
	Rack string `json:"rack,omitempty"`
	// Leaders and Replicas count the partitions (internal topics included)
	// the broker leads and hosts.
	Leaders  int `json:"leaders"`
	Replicas int `json:"replicas"`
	// Fenced is a registered broker that is not serving: killed, shut
	// down, or not yet caught up with the metadata (KIP-1073).
	Fenced bool `json:"fenced"`
}

type quorumView struct {
	LeaderID      int32          `json:"leaderId"`
	LeaderEpoch   int32          `json:"leaderEpoch"`
	HighWatermark int64          `json:"highWatermark"`
	Replicas      []quorumMember `json:"replicas"`
}

type quorumMember struct {
	ID           int32  `json:"id"`
	Role         string `json:"role"` // Leader, Follower or Observer, as kafka-metadata-quorum prints
	LogEndOffset int64  `json:"logEndOffset"`
	Lag          int64  `json:"lag"`
	// LastFetchMsAgo and LastCaughtUpMsAgo are -1 when unknown.
	LastFetchMsAgo    int64 `json:"lastFetchMsAgo"`
	LastCaughtUpMsAgo int64 `json:"lastCaughtUpMsAgo"`
}

func (c *Console) cluster(ctx context.Context, _ *http.Request, cl *kgo.Client) (any, error) {
	resp, err := describeCluster(ctx, cl)
	if err != nil {
		return nil, err
	}
	// A KRaft broker's DescribeCluster names a broker as the controller (the
	// clients cannot reach the controllers), so the active controller is
	// the metadata quorum's leader, unknown (-1) when DescribeQuorum fails.
	v := &clusterView{ClusterID: resp.ClusterID, ControllerID: -1, Brokers: []brokerView{}}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	if tds, err := kadm.NewClient(cl).ListTopicsWithInternal(ctx); err == nil {
		for _, td := range tds {
			for _, p := range td.Partitions {
				leaders[p.Leader]++
				for _, r := range p.Replicas {
					replicas[r]++
				}
			}
		}
	}
	for _, b := range resp.Brokers {
		bv := brokerView{ID: b.NodeID, Host: b.Host, Port: b.Port, Leaders: leaders[b.NodeID], Replicas: replicas[b.NodeID], Fenced: b.IsFenced}
		if b.Rack != nil {
			bv.Rack = *b.Rack
		}
		v.Brokers = append(v.Brokers, bv)
	}
	if q, err := describeQuorum(ctx, cl); err != nil {
		v.QuorumError = err.Error()
	} else {
		v.Quorum, v.ControllerID = q, q.LeaderID
	}
	return v, nil
}

// describeQuorum asks for __cluster_metadata's quorum state (a broker
// forwards DescribeQuorum to the active controller).
func describeQuorum(ctx context.Context, cl kmsg.Requestor) (*quorumView, error) {
	req := kmsg.NewPtrDescribeQuorumRequest()
	t := kmsg.NewDescribeQuorumRequestTopic()
	t.Topic = "__cluster_metadata"
	t.Partitions = append(t.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return nil, errors.New("describe quorum: the answer has no __cluster_metadata partition")
	}
	p := resp.Topics[0].Partitions[0]
	if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
		return nil, fmt.Errorf("describe quorum: %w", err)
	}
	q := &quorumView{LeaderID: p.LeaderID, LeaderEpoch: p.LeaderEpoch, HighWatermark: p.HighWatermark, Replicas: []quorumMember{}}
	now := time.Now().UnixMilli()
	ago := func(ts int64) int64 {
		if ts < 0 {
			return -1
		}
		return max(now-ts, 0)
	}
	add := func(r kmsg.DescribeQuorumResponseTopicPartitionReplicaState, role string) {
		if r.ReplicaID == p.LeaderID {
			role = "Leader"
		}
		q.Replicas = append(q.Replicas, quorumMember{
			ID: r.ReplicaID, Role: role, LogEndOffset: r.LogEndOffset,
			Lag:               max(p.HighWatermark-r.LogEndOffset, 0),
			LastFetchMsAgo:    ago(r.LastFetchTimestamp),
			LastCaughtUpMsAgo: ago(r.LastCaughtUpTimestamp),
		})
	}
	for _, r := range p.CurrentVoters {
		add(r, "Follower")
	}
	for _, r := range p.Observers {
		add(r, "Observer")
	}
	return q, nil
}
