package handlers

// ShareGroupHeartbeat (key 76), version 1 (4.1 released the share group
// RPCs at v1; v0 was early access, never advertised): a share group
// member's one request (KIP-932): join with the topics it subscribes to
// (epoch 0), heartbeat, receive its member epoch and assignment, leave
// (epoch -1). The group's state is written to __consumer_offsets in Kafka's
// record formats before the answer.
//
// Share-partitions are assigned only once their state exists in the
// share-group state persister: after the answer is written, the
// partitions the heartbeat newly subscribed the group to are initialized
// through Deps.SharePersister and reported back to the shard, which then
// assigns them (the member learns of them at its next heartbeat). Without
// a persister, or while share.version is 0, share groups are disabled and
// the request is answered UNSUPPORTED_VERSION, as Kafka answers it while
// share.version is 0.
//
// Needs READ on the group (else GROUP_AUTHORIZATION_FAILED) and DESCRIBE on
// every subscribed topic named (else TOPIC_AUTHORIZATION_FAILED naming
// them), as Kafka. A member id that is empty or longer than 36 characters
// is INVALID_REQUEST (Kafka's isMemberIdValid).

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator/group"
	"gregor/internal/network"
	"gregor/internal/sharestate"
)

var shareGroupHeartbeatAPI = api{key: 76, min: 1, max: 1, handle: (*Handlers).shareGroupHeartbeat, needs: hasShares}

func (h *Handlers) shareGroupHeartbeat(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ShareGroupHeartbeatRequest)
	fail := func(code int16, msg string) (kmsg.Response, error) {
		resp := kmsg.NewPtrShareGroupHeartbeatResponse()
		resp.Version, resp.ErrorCode = r.Version, code
		if msg != "" {
			resp.ErrorMessage = &msg
		}
		return resp, nil
	}
	if h.d.SharePersister == nil || !h.shareGroupsEnabled() {
		return fail(kerr.UnsupportedVersion.Code, "")
	}
	if !h.authorized(ctx, req, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, r.GroupID) {
		return fail(kerr.GroupAuthorizationFailed.Code, "")
	}
	if r.MemberID == "" || len(r.MemberID) > 36 {
		return fail(kerr.InvalidRequest.Code, "")
	}
	var denied []string
	for _, n := range r.SubscribedTopicNames {
		if !h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, n) {
			denied = append(denied, n)
		}
	}
	if len(denied) > 0 {
		return fail(kerr.TopicAuthorizationFailed.Code, "The following topics are unauthorized for subscription: "+strings.Join(denied, ", "))
	}
	clientID, clientHost := clientInfo(req)
	topics := h.groupTopics()
	respond, wait := awaitReply()
	var inits []group.ShareInit
	code := h.onGroupShard(ctx, r.GroupID, func(s *group.Shard, w group.Writer) {
		res := s.ShareGroupHeartbeat(nowMs(), r, clientID, clientHost, topics, respond)
		if finish(w, res) == nil {
			inits = res.ShareInit
		}
	})
	if code != 0 {
		return fail(code, "")
	}
	resp, err := wait(ctx)
	if err != nil {
		return nil, err
	}
	if len(inits) > 0 && resp.(*kmsg.ShareGroupHeartbeatResponse).ErrorCode == 0 {
		h.initializeShareState(ctx, inits)
	}
	return resp, nil
}

// shareInitConcurrency bounds the share-partitions one heartbeat
// initializes at once.
const shareInitConcurrency = 16

// initializeShareState initializes the share-partitions a heartbeat asked
// for, up to shareInitConcurrency at once and for at most
// offsets.commit.timeout.ms, and reports each topic's outcome to the
// group's shard. A failed one is asked for again by a later heartbeat.
func (h *Handlers) initializeShareState(ctx context.Context, inits []group.ShareInit) {
	type outcome struct {
		ok, failed []int32
	}
	outcomes := make([]outcome, len(inits))
	timeout := 5 * time.Second
	if h.d.Broker != nil && h.d.Broker.OffsetsCommitTimeoutMs > 0 {
		timeout = time.Duration(h.d.Broker.OffsetsCommitTimeoutMs) * time.Millisecond
	}
	initCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var (
		mu    sync.Mutex
		wg    sync.WaitGroup
		slots = make(chan struct{}, shareInitConcurrency)
	)
	for i, in := range inits {
		for _, p := range in.Partitions {
			wg.Add(1)
			slots <- struct{}{}
			go func() {
				defer func() { <-slots; wg.Done() }()
				key := sharestate.Key{GroupID: in.GroupID, TopicID: in.TopicID, Partition: p}
				err := h.d.SharePersister.Initialize(initCtx, key, in.StateEpoch, in.StartOffset)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					if !errors.Is(err, context.Canceled) {
						h.d.Logger.Warn("initialize share-partition state", "group", in.GroupID, "partition", p, "err", err)
					}
					outcomes[i].failed = append(outcomes[i].failed, p)
					return
				}
				outcomes[i].ok = append(outcomes[i].ok, p)
			}()
		}
	}
	wg.Wait()
	// The shard learns of the outcome even when the request's context is
	// done: what was initialized is recorded, and the rest retried.
	report := context.WithoutCancel(ctx)
	for i, in := range inits {
		for _, part := range []struct {
			ps []int32
			ok bool
		}{{outcomes[i].ok, true}, {outcomes[i].failed, false}} {
			if len(part.ps) == 0 {
				continue
			}
			code := h.onGroupShard(report, in.GroupID, func(s *group.Shard, w group.Writer) {
				_ = finish(w, s.ShareGroupStateInitialized(nowMs(), in.GroupID, in.TopicID, part.ps, part.ok))
			})
			if code != 0 {
				h.d.Logger.Warn("record share-partition initialization", "group", in.GroupID, "code", code)
			}
		}
	}
}
