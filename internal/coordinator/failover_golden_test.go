package coordinator_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/group"
	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/replica"
)

// TestFailoverScripts runs the golden scripts in testdata/failover: two or
// three brokers, each a real replica.Manager over a real log.dir and a
// coordinator.Runtime with the group coordinator's shard, replicating
// __consumer_offsets partition 0. The scripts send OffsetCommits and
// OffsetFetches through the code the handlers run (Runtime.Do,
// Shard.OffsetCommit, group.Finish), move the partition's records to the
// followers one fetch at a time (ReadAsReplica on the leader, the answer
// applied as the replica fetcher applies it), and kill brokers. Rewrite the
// expected output with:
// go test ./internal/coordinator -run TestFailoverScripts -rewrite
//
// Commands:
//
//	init brokers=N [write-timeout=D]  brokers 1..N, each with an empty
//	                                  log.dir; D is the coordinators'
//	                                  offsets.commit.timeout.ms (default 1m:
//	                                  no commit times out during a script)
//	become leader=L epoch=E isr=(..)  the controller's decision, published to
//	                                  every broker that is up; E is the epoch
//	                                  the metadata gives (a new leader bumps
//	                                  it by one); a new leader must come
//	                                  from the ISR (clean election)
//	commit group=G partition=P offset=O [wait]
//	                                  an OffsetCommit of topic t (generation
//	                                  -1) sent to the leader's coordinator
//	                                  once it has loaded; printed when its
//	                                  write is appended, with its answer so
//	                                  far; wait: until it is answered
//	fetch follower=F [rounds=R]       R rounds of one replica fetch from the
//	                                  current leader
//	crash broker=B                    kill -9: the process and its memory are
//	                                  gone (its files stay, as the page cache
//	                                  outlives a process); requests it had not
//	                                  answered are never answered
//	restart broker=B                  the broker starts from its disk and
//	                                  learns the current metadata
//	answers                           every request and its answer so far
//	offset-fetch group=G              an OffsetFetch of all the group's
//	                                  offsets from the leader's coordinator
//	print                             every broker's log and coordinator
//	check                             no acknowledged commit is lost: the
//	                                  leader answers, for each partition with
//	                                  an acknowledged commit, the offset of
//	                                  that commit or of a later request, and
//	                                  never one older than it answered before
//
// After every command the requests whose outcome is decided (the high
// watermark passed their write, or their coordinator lost the partition)
// are waited for and their answers printed; the others stay unanswered.
// A failed check also fails the test, so a rewrite cannot bless lost data.
func TestFailoverScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/failover", func(t *testing.T, path string) {
		c := &cluster{t: t, img: metadata.EmptyImage(), seen: map[string]int{}}
		defer c.closeAll()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			c.t = t
			return c.run(d)
		})
	})
}

const (
	offsetsTopic = "__consumer_offsets"
	// committedTopic is the topic whose offsets the scripts commit.
	committedTopic = "t"
	// settleTimeout bounds every wait for something that must happen.
	settleTimeout = 10 * time.Second
)

var (
	offsetsTP      = log.TopicPartition{Topic: offsetsTopic, Partition: 0}
	offsetsTopicID = [16]byte{0xc0, 0xff, 0xee}
	quiet          = slog.New(slog.DiscardHandler)
)

// broker is one broker: its log.dir and, while it is up, its log manager,
// replica manager and group coordinator.
type broker struct {
	id   int32
	dir  string
	logs *log.Manager
	rm   *replica.Manager
	rt   *coordinator.Runtime // nil while down
}

// commitRequest is one OffsetCommit as its client sees it.
type commitRequest struct {
	id        int
	group     string
	partition int32
	offset    int64
	broker    int32 // the coordinator it was sent to
	epoch     int32 // that broker's leader epoch of the offsets partition

	// target is the offsets partition's log end right after the request's
	// write: the write is committed once the high watermark reaches it.
	// Set before written is closed.
	target  int64
	written chan struct{}
	done    chan struct{} // closed once code is set
	code    int16         // the answer; -1: none (the connection closed)
	cancel  context.CancelFunc
	// crashed: the coordinator died before answering. Its connection is
	// gone: whatever the dead process computed is never seen.
	crashed bool
	printed string // the state last printed
}

func (r *commitRequest) String() string {
	return fmt.Sprintf("#%d %s %s-%d=%d", r.id, r.group, committedTopic, r.partition, r.offset)
}

func (r *commitRequest) answered() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// state is the request's answer as its client sees it.
func (r *commitRequest) state() string {
	switch {
	case r.crashed:
		return fmt.Sprintf("no answer (r%d crashed)", r.broker)
	case !r.answered():
		return "not answered"
	case r.code == 0:
		return "success"
	}
	return codeName(r.code)
}

type cluster struct {
	t            *testing.T
	img          *metadata.Image
	brokers      []*broker
	writeTimeout time.Duration
	created      bool
	requests     []*commitRequest
	// seen is, per group and partition, the request whose offset an
	// offset-fetch last answered: answers never go back before it.
	seen map[string]int
	wg   sync.WaitGroup // the requests in flight
}

func (c *cluster) run(d *datadriven.TestData) string {
	var out strings.Builder
	var err error
	switch d.Cmd {
	case "init":
		err = c.init(d)
	case "become":
		err = c.become(d, &out)
	case "commit":
		err = c.commit(d, &out)
	case "fetch":
		rounds := 1
		if d.HasArg("rounds") {
			rounds = int(c.intArg(d, "rounds"))
		}
		for i := 0; i < rounds && err == nil; i++ {
			err = c.fetch(c.intArg(d, "follower"), &out)
		}
	case "crash":
		err = c.crash(c.intArg(d, "broker"), &out)
	case "restart":
		err = c.restart(c.intArg(d, "broker"), &out)
	case "answers":
		for _, r := range c.requests {
			fmt.Fprintf(&out, "%s to r%d: %s\n", r, r.broker, r.state())
			r.printed = r.state()
		}
	case "offset-fetch":
		var g string
		d.ScanArgs(c.t, "group", &g)
		err = c.offsetFetch(g, &out)
	case "print":
		c.print(&out)
	case "check":
		c.check(&out)
	default:
		c.t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	}
	if err != nil {
		fmt.Fprintf(&out, "error: %v\n", err)
	}
	c.settle(&out)
	return out.String()
}

func (c *cluster) intArg(d *datadriven.TestData, key string) int32 {
	c.t.Helper()
	var s string
	d.ScanArgs(c.t, key, &s)
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		c.t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return int32(v)
}

func (c *cluster) init(d *datadriven.TestData) error {
	if len(c.brokers) > 0 {
		return errors.New("already initialised")
	}
	c.writeTimeout = time.Minute
	if d.HasArg("write-timeout") {
		var s string
		d.ScanArgs(c.t, "write-timeout", &s)
		v, err := time.ParseDuration(s)
		if err != nil {
			c.t.Fatalf("%s: write-timeout: %v", d.Pos, err)
		}
		c.writeTimeout = v
	}
	for id := int32(1); id <= c.intArg(d, "brokers"); id++ {
		b := &broker{id: id, dir: c.t.TempDir()}
		c.brokers = append(c.brokers, b)
		if err := c.start(b); err != nil {
			return err
		}
	}
	return nil
}

// start opens the broker's logs, hosts what the current image assigns it
// and starts its group coordinator, as the server does at boot: the
// replica manager's Publish comes first (it opens the logs the coordinator
// loads from).
func (c *cluster) start(b *broker) error {
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{b.dir}, Logger: quiet})
	if err != nil {
		return fmt.Errorf("open log dir of r%d: %w", b.id, err)
	}
	b.logs = logs
	b.rm = replica.New(replica.Config{NodeID: b.id, Logger: quiet}, logs)
	b.rm.Publish(nil, c.img)
	cfg := group.Config{
		MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1800000, MaxSize: 1000,
		OffsetMetadataMaxBytes: 4096, OffsetsRetentionMs: 7 * 24 * 3600 * 1000, OffsetsRetentionCheckMs: 600000,
	}
	b.rt = coordinator.New(coordinator.Config{
		Topic: offsetsTopic, NodeID: b.id, Replica: b.rm, Logger: quiet, WriteTimeout: c.writeTimeout,
		NewShard: func(int32) coordinator.Shard { return group.Coordinated{Shard: group.NewShard(cfg)} },
	})
	b.rt.Publish(nil, c.img)
	return nil
}

// stop ends a broker's processes, the coordinator first (as the server
// does), and forgets them.
func (c *cluster) stop(b *broker) error {
	b.rt.Close()
	b.rm.Close()
	err := b.logs.Close()
	b.rt, b.rm, b.logs = nil, nil, nil
	return err
}

func (c *cluster) closeAll() {
	for _, r := range c.requests {
		r.cancel()
	}
	for _, b := range c.brokers {
		if b.rt != nil {
			if err := c.stop(b); err != nil {
				c.t.Errorf("close r%d: %v", b.id, err)
			}
		}
	}
	c.wg.Wait()
}

func (c *cluster) broker(id int32) (*broker, error) {
	if id < 1 || int(id) > len(c.brokers) {
		return nil, fmt.Errorf("no broker %d", id)
	}
	return c.brokers[id-1], nil
}

// meta is the offsets partition as the metadata has it.
func (c *cluster) meta() (*metadata.Partition, bool) {
	t := c.img.Topics.Topic(offsetsTopic)
	if t == nil {
		return nil, false
	}
	p := t.Partition(0)
	return p, p != nil
}

// leader is the broker the metadata names leader, which must be up.
func (c *cluster) leader() (*broker, error) {
	mp, ok := c.meta()
	if !ok {
		return nil, errors.New("no offsets partition yet")
	}
	b, err := c.broker(mp.Leader)
	if err != nil {
		return nil, err
	}
	if b.rt == nil {
		return nil, fmt.Errorf("leader r%d is down", b.id)
	}
	return b, nil
}

// become publishes the controller's decision to the brokers that are up;
// brokers that are down learn it when they restart.
func (c *cluster) become(d *datadriven.TestData, out *strings.Builder) error {
	leader, epoch := c.intArg(d, "leader"), c.intArg(d, "epoch")
	var isr []int32
	arg, ok := d.Arg("isr")
	if !ok {
		c.t.Fatalf("%s: missing isr", d.Pos)
	}
	for _, s := range arg.Vals {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			c.t.Fatalf("%s: isr: %v", d.Pos, err)
		}
		isr = append(isr, int32(v))
	}
	var recs []metadata.Record
	if !c.created {
		all := make([]int32, len(c.brokers))
		for i := range all {
			all[i] = int32(i + 1)
		}
		recs = []metadata.Record{
			&metadata.TopicRecord{Name: offsetsTopic, TopicID: offsetsTopicID},
			&metadata.PartitionRecord{RecordVersion: metadata.PartitionRecordVersion, PartitionID: 0, TopicID: offsetsTopicID,
				Replicas: all, ISR: isr, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
				Leader: leader, LeaderEpoch: epoch, Directories: make([][16]byte, len(all))},
		}
		c.created = true
	} else {
		cur, _ := c.meta()
		ch := metadata.NewPartitionChangeRecord(offsetsTopicID, 0)
		ch.ISR = isr
		if leader != cur.Leader {
			if !slices.Contains(cur.ISR, leader) {
				return fmt.Errorf("r%d is not in the ISR %v: that election would be unclean", leader, cur.ISR)
			}
			ch.Leader = leader
		}
		recs = []metadata.Record{ch}
	}
	delta := metadata.NewDelta(c.img)
	if err := delta.ReplayBatch(metadata.Batch{BaseOffset: c.img.Offset + 1, LastOffset: c.img.Offset + int64(len(recs)), Epoch: 1, Records: recs}); err != nil {
		c.t.Fatal(err)
	}
	c.img = delta.Apply()
	for _, b := range c.brokers {
		if b.rt != nil {
			b.rm.Publish(delta, c.img)
			b.rt.Publish(delta, c.img)
		}
	}
	p, _ := c.meta()
	if p.LeaderEpoch != epoch {
		c.t.Fatalf("%s: the metadata gives leader epoch %d, the script says %d", d.Pos, p.LeaderEpoch, epoch)
	}
	fmt.Fprintf(out, "leader=%d epoch=%d isr=%v\n", p.Leader, p.LeaderEpoch, p.ISR)
	return nil
}

// awaitLoaded waits until the broker's coordinator has loaded the offsets
// partition: a client retries COORDINATOR_LOAD_IN_PROGRESS until then.
func (c *cluster) awaitLoaded(b *broker) error {
	deadline := time.Now().Add(settleTimeout)
	for {
		if parts, loading := b.rt.Partitions(); slices.Contains(parts, 0) && !loading {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the coordinator of r%d did not load within %v", b.id, settleTimeout)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *cluster) commit(d *datadriven.TestData, out *strings.Builder) error {
	var g string
	d.ScanArgs(c.t, "group", &g)
	b, err := c.leader()
	if err != nil {
		return err
	}
	if err := c.awaitLoaded(b); err != nil {
		return err
	}
	part, _ := b.rm.Hosted(offsetsTP)
	ctx, cancel := context.WithCancel(context.Background())
	r := &commitRequest{id: len(c.requests) + 1, group: g, partition: c.intArg(d, "partition"),
		offset: int64(c.intArg(d, "offset")), broker: b.id, epoch: part.LeaderEpoch(), target: -1,
		written: make(chan struct{}), done: make(chan struct{}), cancel: cancel}
	c.requests = append(c.requests, r)
	rt, rm := b.rt, b.rm
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer close(r.done)
		r.code = sendCommit(ctx, rt, rm, r)
	}()
	select {
	case <-r.written:
	case <-r.done:
	case <-time.After(settleTimeout):
		c.t.Fatalf("%s: %s neither written nor answered within %v", d.Pos, r, settleTimeout)
	}
	if d.HasArg("wait") {
		select {
		case <-r.done:
		case <-time.After(c.writeTimeout + settleTimeout):
			c.t.Fatalf("%s: %s not answered within %v", d.Pos, r, c.writeTimeout+settleTimeout)
		}
	}
	fmt.Fprintf(out, "%s to r%d", r, r.broker)
	select {
	case <-r.written:
		fmt.Fprintf(out, ", appended below offset %d", r.target)
	default:
	}
	r.printed = r.state()
	fmt.Fprintf(out, ": %s\n", r.printed)
	return nil
}

// sendCommit is the OffsetCommit handler (handlers/08_offset_commit.go) for
// one partition: the shard's Result carried out by group.Finish inside
// Runtime.Do, Do's error answered as its code, else the shard's reply.
func sendCommit(ctx context.Context, rt *coordinator.Runtime, rm *replica.Manager, r *commitRequest) int16 {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation = 9, r.group, -1
	rtp := kmsg.NewOffsetCommitRequestTopic()
	rtp.Topic = committedTopic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Partition, rp.Offset, rp.LeaderEpoch = r.partition, r.offset, -1
	rtp.Partitions = append(rtp.Partitions, rp)
	req.Topics = append(req.Topics, rtp)
	reply := make(chan kmsg.Response, 1)
	respond := func(resp kmsg.Response) {
		select {
		case reply <- resp:
		default:
		}
	}
	err := rt.Do(ctx, 0, func(s coordinator.Shard, w *coordinator.Writer) {
		defer close(r.written)
		res := s.(group.Coordinated).Shard.OffsetCommit(time.Now().UnixMilli(), req, respond)
		_ = group.Finish(group.RuntimeWriter{W: w}, res, group.AppendErrorCode)
		if p, ok := rm.Hosted(offsetsTP); ok {
			r.target = p.Log().LogEndOffset()
		}
	})
	if err != nil {
		return coordinatorCode(err)
	}
	select {
	case resp := <-reply:
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	case <-ctx.Done():
		return -1
	}
}

// coordinatorCode is the handlers' coordinatorErrorCode: Do's kerr code,
// else COORDINATOR_NOT_AVAILABLE.
func coordinatorCode(err error) int16 {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// decided reports whether a request's answer can no longer wait: its write
// is committed (the high watermark reached it), or its coordinator no
// longer leads the partition in the epoch it was sent in.
func (c *cluster) decided(r *commitRequest) bool {
	b := c.brokers[r.broker-1]
	if b.rm == nil {
		return true
	}
	p, ok := b.rm.Hosted(offsetsTP)
	if !ok || !p.IsLeader() || p.LeaderEpoch() != r.epoch {
		return true
	}
	select {
	case <-r.written:
		return p.HighWatermark() >= r.target
	default:
		return false
	}
}

// settle waits for the answers of the requests whose outcome is decided
// and prints the answers that changed.
func (c *cluster) settle(out *strings.Builder) {
	for _, r := range c.requests {
		if !r.crashed && !r.answered() && c.decided(r) {
			select {
			case <-r.done:
			case <-time.After(settleTimeout):
				c.t.Fatalf("%s: decided but not answered within %v", r, settleTimeout)
			}
		}
		if s := r.state(); s != r.printed {
			fmt.Fprintf(out, "%s: %s\n", r, s)
			r.printed = s
		}
	}
}

// fetch is one round of a follower's replica fetcher: its fetch state sent
// to the leader's ReadAsReplica, the answer applied as the replica
// fetcher's handle does (truncate on a diverging epoch, else append and
// adopt the leader's high watermark).
func (c *cluster) fetch(id int32, out *strings.Builder) error {
	f, err := c.broker(id)
	if err != nil {
		return err
	}
	if f.rm == nil {
		return fmt.Errorf("r%d is down", id)
	}
	leader, err := c.leader()
	if err != nil {
		return err
	}
	if leader.id == id {
		return fmt.Errorf("r%d is the leader", id)
	}
	p, ok := f.rm.Hosted(offsetsTP)
	if !ok {
		return fmt.Errorf("r%d does not host %s", id, offsetsTP)
	}
	l := p.Log()
	req := replica.ReplicaFetch{ReplicaID: id, BrokerEpoch: -1, CurrentLeaderEpoch: p.LeaderEpoch(),
		FetchOffset: l.LogEndOffset(), LogStartOffset: l.LogStartOffset(), LastFetchedEpoch: -1,
		MaxBytes: 1 << 20, MinOneBatch: true}
	if e, ok := l.LatestEpoch(); ok {
		req.LastFetchedEpoch = e
	}
	res, div := leader.rm.ReadAsReplica(offsetsTopic, 0, req)
	fmt.Fprintf(out, "r%d fetch offset=%d last-fetched-epoch=%d from r%d: ", id, req.FetchOffset, req.LastFetchedEpoch, leader.id)
	switch {
	case res.Err != nil:
		fmt.Fprintf(out, "%v\n", res.Err)
		return nil
	case div != nil:
		fmt.Fprintf(out, "diverging epoch=%d end-offset=%d", div.Epoch, div.EndOffset)
	default:
		fmt.Fprintf(out, "records=[%s] hw=%d", strings.Join(describeRecords(c.t, res.Records), " "), res.HighWatermark)
	}
	_, err = p.AsFollower(req.CurrentLeaderEpoch, func() error {
		if div != nil {
			target := div.EndOffset
			if e, end := l.EndOffsetForEpoch(div.Epoch); end != log.UndefinedEpochOffset {
				if e != div.Epoch {
					target = end
				} else {
					target = min(target, end)
				}
			}
			if target < l.LogEndOffset() {
				return l.TruncateTo(target)
			}
			return nil
		}
		if len(res.Records) > 0 {
			if _, err := l.AppendAsFollower(res.Records); err != nil {
				return err
			}
		}
		if hw := min(res.HighWatermark, l.LogEndOffset()); hw > l.HighWatermark() {
			l.SetHighWatermark(hw)
		}
		return nil
	})
	fmt.Fprintf(out, " -> r%d leo=%d hw=%d\n", id, l.LogEndOffset(), l.HighWatermark())
	return err
}

// crash kills a broker: what it had not answered is never answered. Its
// processes are closed to free them, after the requests are marked, so
// nothing they say then counts. The clean-shutdown marker and the
// recovery-point checkpoint that closing writes are removed: the restart
// recovers the logs as after kill -9.
func (c *cluster) crash(id int32, out *strings.Builder) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	if b.rt == nil {
		return fmt.Errorf("r%d is down", id)
	}
	for _, r := range c.requests {
		if r.broker == id && !r.answered() {
			r.crashed = true
			r.cancel()
		}
	}
	if err := c.stop(b); err != nil {
		return err
	}
	for _, f := range []string{log.CleanShutdownFileName, log.RecoveryPointCheckpointFile} {
		if err := os.Remove(filepath.Join(b.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	fmt.Fprintf(out, "r%d crashed\n", id)
	return nil
}

func (c *cluster) restart(id int32, out *strings.Builder) error {
	b, err := c.broker(id)
	if err != nil {
		return err
	}
	if b.rt != nil {
		return fmt.Errorf("r%d is up", id)
	}
	if err := c.start(b); err != nil {
		return err
	}
	fmt.Fprintf(out, "r%d restarted: %s\n", id, c.describe(b))
	return nil
}

// fetchOffsets is the OffsetFetch handler (handlers/09_offset_fetch.go) for
// one group on the leader's coordinator: its committed offsets by
// partition of the committed topic, or the error code.
func (c *cluster) fetchOffsets(g string) (leader int32, offsets map[int32]int64, code int16, err error) {
	b, err := c.leader()
	if err != nil {
		return 0, nil, 0, err
	}
	if err := c.awaitLoaded(b); err != nil {
		return 0, nil, 0, err
	}
	var topics []kmsg.OffsetFetchResponseGroupTopic
	doErr := b.rt.Do(context.Background(), 0, func(s coordinator.Shard, _ *coordinator.Writer) {
		shard := s.(group.Coordinated).Shard
		if code = shard.ValidateOffsetFetch(g, nil, -1); code != 0 {
			return
		}
		code, topics = shard.FetchOffsets(g, nil, false)
	})
	if doErr != nil {
		code = coordinatorCode(doErr)
	}
	if code != 0 {
		return b.id, nil, code, nil
	}
	offsets = map[int32]int64{}
	for _, t := range topics {
		for _, p := range t.Partitions {
			if t.Topic == committedTopic && p.ErrorCode == 0 {
				offsets[p.Partition] = p.Offset
			}
		}
	}
	return b.id, offsets, code, nil
}

func (c *cluster) offsetFetch(g string, out *strings.Builder) error {
	leader, offsets, code, err := c.fetchOffsets(g)
	if err != nil {
		return err
	}
	if code != 0 {
		fmt.Fprintf(out, "r%d: %s\n", leader, codeName(code))
		return nil
	}
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(offsets)) {
		parts = append(parts, fmt.Sprintf("%s-%d=%d", committedTopic, p, offsets[p]))
		c.observe(g, p, offsets[p], nil)
	}
	fmt.Fprintf(out, "r%d: %s [%s]\n", leader, g, strings.Join(parts, " "))
	return nil
}

// observe notes that a coordinator answered offset for a group's
// partition, and reports (to problems, when given) an answer that goes
// back: the offset of no request, or of a request older than the last
// acknowledged one or than the one answered before.
func (c *cluster) observe(g string, partition int32, offset int64, problems *[]string) {
	key := fmt.Sprintf("%s/%s-%d", g, committedTopic, partition)
	from, acked := 0, 0 // request ids; 0: none
	for _, r := range c.requests {
		if r.group != g || r.partition != partition {
			continue
		}
		if r.offset == offset {
			from = r.id
		}
		if r.answered() && !r.crashed && r.code == 0 {
			acked = r.id
		}
	}
	report := func(format string, args ...any) {
		if problems != nil {
			*problems = append(*problems, fmt.Sprintf(format, args...))
		}
	}
	switch {
	case from == 0 && offset >= 0:
		report("%s is %d, which no request committed", key, offset)
	case from < acked:
		report("%s is %d: the acknowledged commit %s is lost", key, offset, c.requests[acked-1])
	case from < c.seen[key]:
		report("%s went back to %d from %d", key, offset, c.requests[c.seen[key]-1].offset)
	}
	c.seen[key] = max(c.seen[key], from)
}

// check asserts that no acknowledged commit is lost and that committed
// offsets never go back: the leader's coordinator answers, for every group
// partition with a commit, an offset at least as recent as the last
// acknowledged commit and the last answer. Failures also fail the test.
func (c *cluster) check(out *strings.Builder) {
	type groupPartition struct {
		group     string
		partition int32
	}
	var keys []groupPartition
	var acked []string
	for _, r := range c.requests {
		if k := (groupPartition{r.group, r.partition}); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
		if r.answered() && !r.crashed && r.code == 0 {
			acked = append(acked, "#"+strconv.Itoa(r.id))
		}
	}
	var problems, answers []string
	leader := int32(0)
	for _, k := range keys {
		var offsets map[int32]int64
		var code int16
		var err error
		leader, offsets, code, err = c.fetchOffsets(k.group)
		if err == nil && code != 0 {
			err = fmt.Errorf("offset fetch: %s", codeName(code))
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", k.group, err))
			continue
		}
		offset, ok := offsets[k.partition]
		if !ok {
			offset = -1
		}
		answers = append(answers, fmt.Sprintf("%s/%s-%d=%d", k.group, committedTopic, k.partition, offset))
		c.observe(k.group, k.partition, offset, &problems)
	}
	for _, p := range problems {
		c.t.Error(p)
		fmt.Fprintf(out, "FAIL: %s\n", p)
	}
	if len(problems) == 0 {
		fmt.Fprintf(out, "ok: acknowledged [%s]; r%d answers %s\n", strings.Join(acked, " "), leader, strings.Join(answers, " "))
	}
}
