package replica

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/metadata"
	"gregor/internal/partition"
	"gregor/internal/record"
)

// TestReplicationScripts runs the golden scripts in testdata/replication:
// two or three brokers' replicas of one partition, each a real Partition
// over a real Log in its own directory, driven one step at a time through
// the code the brokers run (metadata publishing, AppendAsLeader,
// ReadAsReplica on the leader and fetcher.handle on the follower), with
// crashes that lose a log's unflushed tail. Rewrite the expected output
// with: go test ./internal/replica -run TestReplicationScripts -rewrite
//
// Commands:
//
//	init replicas=N                   brokers 1..N, each with an empty log.dir
//	become leader=L epoch=E isr=(..)  the controller's decision, published to
//	                                  every broker that is up; E must be the
//	                                  epoch the metadata gives (a new leader
//	                                  bumps it by one)
//	produce replica=L records=K       K acks=all produces of one record each;
//	                                  a record is acknowledged once its
//	                                  leader's high watermark passes it
//	fetch follower=F [rounds=R] [max-bytes=B] [lose-response]
//	                                  R rounds of one replica fetch from the
//	                                  current leader, of at most B bytes
//	                                  (1 MiB; the first batch always);
//	                                  lose-response drops the answer after
//	                                  the leader processed it. The follower's
//	                                  lag after the answer is printed (lag=)
//	crash replica=R [lose=K]          the broker dies: its last K batches
//	                                  were never flushed and are gone
//	restart replica=R                 the broker starts from its disk and
//	                                  learns the current metadata
//	print                             every replica's log and epochs
//	check                             no acknowledged record lost, and the
//	                                  live replicas' logs are the same
//
// A failed check also fails the test, so a rewrite cannot bless lost data.
func TestReplicationScripts(t *testing.T) {
	datadriven.Walk(t, "testdata/replication", func(t *testing.T, path string) {
		c := &goldenCluster{t: t, img: metadata.EmptyImage()}
		defer c.closeAll()
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			c.t = t
			return c.run(d)
		})
	})
}

const goldenTopic = "golden"

var goldenTP = log.TopicPartition{Topic: goldenTopic, Partition: 0}

// goldenReplica is one broker's replica: its log.dir, and while the broker
// is up, the log manager and replica manager over it.
type goldenReplica struct {
	id   int32
	dir  string
	logs *log.Manager
	m    *Manager // nil while down
}

// produced is an acks=all produce waiting for, or given, its answer.
type produced struct {
	value  string
	offset int64
	leader int32
	epoch  int32
}

type goldenCluster struct {
	t        *testing.T
	img      *metadata.Image
	replicas []*goldenReplica
	created  bool
	next     int // the next record is m<next>
	pending  []produced
	acked    []produced
	// unflushed are the records some crash took off a disk.
	unflushed map[string]bool
}

func (c *goldenCluster) run(d *datadriven.TestData) string {
	var out strings.Builder
	var err error
	switch d.Cmd {
	case "init":
		err = c.init(int(c.intArg(d, "replicas")))
	case "become":
		err = c.become(d, &out)
	case "produce":
		err = c.produce(c.intArg(d, "replica"), int(c.intArg(d, "records")), &out)
	case "fetch":
		rounds := 1
		if d.HasArg("rounds") {
			rounds = int(c.intArg(d, "rounds"))
		}
		maxBytes := int32(1 << 20)
		if d.HasArg("max-bytes") {
			maxBytes = int32(c.intArg(d, "max-bytes"))
		}
		for i := 0; i < rounds && err == nil; i++ {
			err = c.fetch(c.intArg(d, "follower"), maxBytes, d.HasArg("lose-response"), &out)
		}
	case "crash":
		lose := 0
		if d.HasArg("lose") {
			lose = int(c.intArg(d, "lose"))
		}
		err = c.crash(c.intArg(d, "replica"), lose, &out)
	case "restart":
		err = c.restart(c.intArg(d, "replica"), &out)
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
	c.settleProduces(&out)
	return out.String()
}

func (c *goldenCluster) intArg(d *datadriven.TestData, key string) int32 {
	c.t.Helper()
	var s string
	d.ScanArgs(c.t, key, &s)
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		c.t.Fatalf("%s: %s=%q: %v", d.Pos, key, s, err)
	}
	return int32(v)
}

func (c *goldenCluster) listArg(d *datadriven.TestData, key string) []int32 {
	c.t.Helper()
	arg, ok := d.Arg(key)
	if !ok {
		c.t.Fatalf("%s: missing %s", d.Pos, key)
	}
	var ids []int32
	for _, s := range arg.Vals {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			c.t.Fatalf("%s: %s: %v", d.Pos, key, err)
		}
		ids = append(ids, int32(v))
	}
	return ids
}

func (c *goldenCluster) init(n int) error {
	if len(c.replicas) > 0 {
		return errors.New("already initialised")
	}
	for id := int32(1); id <= int32(n); id++ {
		r := &goldenReplica{id: id, dir: c.t.TempDir()}
		c.replicas = append(c.replicas, r)
		if err := c.start(r); err != nil {
			return err
		}
	}
	return nil
}

// start opens the broker's logs and hosts what the current image assigns it
// (the replica manager's first Publish reconciles in full, as at boot).
func (c *goldenCluster) start(r *goldenReplica) error {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	logs, err := log.NewManager(log.ManagerConfig{Dirs: []string{r.dir}, Logger: quiet})
	if err != nil {
		return fmt.Errorf("open log dir of %d: %w", r.id, err)
	}
	r.logs = logs
	r.m = New(Config{NodeID: r.id, Logger: quiet}, logs)
	r.m.Publish(nil, c.img)
	return nil
}

func (c *goldenCluster) closeAll() {
	for _, r := range c.replicas {
		if r.m != nil {
			r.m.Close()
			if err := r.logs.Close(); err != nil {
				c.t.Errorf("close logs of %d: %v", r.id, err)
			}
			r.m, r.logs = nil, nil
		}
	}
}

func (c *goldenCluster) replica(id int32) (*goldenReplica, error) {
	if id < 1 || int(id) > len(c.replicas) {
		return nil, fmt.Errorf("no replica %d", id)
	}
	return c.replicas[id-1], nil
}

func (c *goldenCluster) up() []*Manager {
	var ms []*Manager
	for _, r := range c.replicas {
		if r.m != nil {
			ms = append(ms, r.m)
		}
	}
	return ms
}

// meta is the partition as the metadata has it.
func (c *goldenCluster) meta() (*metadata.Partition, bool) {
	t := c.img.Topics.Topic(goldenTopic)
	if t == nil {
		return nil, false
	}
	p := t.Partition(0)
	return p, p != nil
}

// become publishes the controller's decision to the brokers that are up;
// brokers that are down learn it when they restart.
func (c *goldenCluster) become(d *datadriven.TestData, out *strings.Builder) error {
	leader, epoch, isr := c.intArg(d, "leader"), c.intArg(d, "epoch"), c.listArg(d, "isr")
	var recs []metadata.Record
	if !c.created {
		all := make([]int32, len(c.replicas))
		for i := range all {
			all[i] = int32(i + 1)
		}
		pr := partRecord(topicID(7), 0, all...)
		pr.Leader, pr.LeaderEpoch, pr.ISR = leader, epoch, isr
		recs = []metadata.Record{&metadata.TopicRecord{Name: goldenTopic, TopicID: topicID(7)}, pr}
		c.created = true
	} else {
		cur, _ := c.meta()
		ch := metadata.NewPartitionChangeRecord(topicID(7), 0)
		ch.ISR = isr
		if leader != cur.Leader || epoch != cur.LeaderEpoch {
			ch.Leader = leader
		}
		recs = []metadata.Record{ch}
	}
	c.img = feed(c.t, c.img, c.up(), recs...)
	p, _ := c.meta()
	if p.LeaderEpoch != epoch {
		c.t.Fatalf("%s: the metadata gives leader epoch %d, the script says %d", d.Pos, p.LeaderEpoch, epoch)
	}
	fmt.Fprintf(out, "leader=%d epoch=%d isr=%v\n", p.Leader, p.LeaderEpoch, p.ISR)
	return nil
}

func (c *goldenCluster) produce(id int32, n int, out *strings.Builder) error {
	r, err := c.replica(id)
	if err != nil {
		return err
	}
	if r.m == nil {
		return fmt.Errorf("replica %d is down", id)
	}
	var done []string
	for i := 0; i < n; i++ {
		value := fmt.Sprintf("m%d", c.next)
		c.next++
		b := record.NewBuilder(record.BuilderOptions{Codec: record.CodecNone, ProducerID: record.NoProducerID,
			ProducerEpoch: record.NoProducerEpoch, BaseSequence: record.NoSequence})
		b.Append(time.Now().UnixMilli(), nil, []byte(value), nil)
		batch, err := b.Build()
		if err != nil {
			return err
		}
		res := r.m.Append(goldenTopic, 0, -1, batch)
		if res.Err != nil {
			return fmt.Errorf("produce %s: %w", value, res.Err)
		}
		part, _ := r.m.Hosted(goldenTP)
		c.pending = append(c.pending, produced{value: value, offset: res.Info.FirstOffset, leader: id, epoch: part.LeaderEpoch()})
		done = append(done, fmt.Sprintf("%s@%d", value, res.Info.FirstOffset))
	}
	fmt.Fprintf(out, "r%d appended %s\n", id, strings.Join(done, " "))
	return nil
}

// settleProduces answers the acks=all produces whose fate is decided, as
// WaitReplicated would: acknowledged once the leader's high watermark passes
// the record, failed when the broker that took it no longer leads.
func (c *goldenCluster) settleProduces(out *strings.Builder) {
	var acked, failed []string
	keep := c.pending[:0]
	for _, p := range c.pending {
		r := c.replicas[p.leader-1]
		if r.m == nil {
			failed = append(failed, p.value)
			continue
		}
		part, err := r.m.Leader(goldenTopic, 0)
		if err != nil {
			failed = append(failed, p.value)
			continue
		}
		done, err := part.ReachedOffset(p.offset + 1)
		switch {
		case err != nil:
			failed = append(failed, p.value)
		case done:
			acked = append(acked, p.value)
			c.acked = append(c.acked, p)
		default:
			keep = append(keep, p)
		}
	}
	c.pending = keep
	if len(acked) > 0 {
		fmt.Fprintf(out, "acknowledged: %s\n", strings.Join(acked, " "))
	}
	if len(failed) > 0 {
		fmt.Fprintf(out, "produce failed (not acknowledged): %s\n", strings.Join(failed, " "))
	}
}

// fetch is one round of a follower's replica fetcher: its fetch state sent
// to the leader's ReadAsReplica, the answer built as the Fetch handler
// builds it, then applied by fetcher.handle.
func (c *goldenCluster) fetch(id int32, maxBytes int32, loseResponse bool, out *strings.Builder) error {
	f, err := c.replica(id)
	if err != nil {
		return err
	}
	if f.m == nil {
		return fmt.Errorf("replica %d is down", id)
	}
	mp, ok := c.meta()
	if !ok || mp.Leader == id {
		return fmt.Errorf("replica %d is not a follower", id)
	}
	leader, err := c.replica(mp.Leader)
	if err != nil {
		return err
	}
	if leader.m == nil {
		return fmt.Errorf("leader %d is down", mp.Leader)
	}
	p, ok := f.m.Hosted(goldenTP)
	if !ok {
		return fmt.Errorf("replica %d does not host the partition", id)
	}
	// The fetch state, as fetcher.fetchOnce sends it.
	l := p.Log()
	req := ReplicaFetch{ReplicaID: id, BrokerEpoch: -1, CurrentLeaderEpoch: p.LeaderEpoch(),
		FetchOffset: l.LogEndOffset(), LogStartOffset: l.LogStartOffset(), LastFetchedEpoch: -1,
		MaxBytes: maxBytes, MinOneBatch: true}
	if e, ok := l.LatestEpoch(); ok {
		req.LastFetchedEpoch = e
	}
	// The read the Fetch handler does: the records left in the segment
	// file, read out here as the connection writer would send them.
	res, div := leader.m.ReadFileRangeAsReplica(goldenTopic, 0, req)
	records, err := res.File.ReadAll()
	res.File.Release()
	if err != nil {
		return err
	}
	rp := kmsg.NewFetchResponseTopicPartition()
	rp.ErrorCode = errCode(res.Err)
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.HighWatermark, res.LastStableOffset, res.LogStartOffset
	rp.RecordBatches = records
	if div != nil {
		rp.DivergingEpoch = *div
	}
	fmt.Fprintf(out, "r%d fetch offset=%d last-fetched-epoch=%d from r%d: ", id, req.FetchOffset, req.LastFetchedEpoch, mp.Leader)
	switch {
	case rp.ErrorCode != 0:
		fmt.Fprintf(out, "%v", kerr.ErrorForCode(rp.ErrorCode))
	case div != nil:
		fmt.Fprintf(out, "diverging epoch=%d end-offset=%d", div.Epoch, div.EndOffset)
	default:
		fmt.Fprintf(out, "records=[%s] hw=%d", strings.Join(describeRecords(c.t, rp.RecordBatches), " "), rp.HighWatermark)
	}
	if loseResponse {
		fmt.Fprintf(out, "; response lost\n")
		return nil
	}
	fe := &fetcher{m: f.m, key: fetcherKey{leader: mp.Leader}, logger: f.m.cfg.Logger, parts: map[log.TopicPartition]*partition.Partition{goldenTP: p},
		lags: map[log.TopicPartition]int64{}}
	herr := fe.handle(p, &rp)
	fmt.Fprintf(out, " -> r%d leo=%d hw=%d", id, l.LogEndOffset(), l.HighWatermark())
	if lag, ok := fe.lags[goldenTP]; ok {
		fmt.Fprintf(out, " lag=%d", lag)
	}
	if herr != nil {
		fmt.Fprintf(out, " (%v)", herr)
	}
	out.WriteString("\n")
	return nil
}

func errCode(err error) int16 {
	if err == nil {
		return 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.UnknownServerError.Code
}

// crash stops a broker without a clean shutdown: the clean-shutdown marker
// and the recovery-point checkpoint are gone (recovery scans the whole log),
// and the last lose batches of the active segment never reached the disk.
// The leader-epoch-checkpoint stays: it is written and synced at each change.
func (c *goldenCluster) crash(id int32, lose int, out *strings.Builder) error {
	r, err := c.replica(id)
	if err != nil {
		return err
	}
	if r.m == nil {
		return fmt.Errorf("replica %d is down", id)
	}
	r.m.Close()
	if err := r.logs.Close(); err != nil {
		return err
	}
	r.m, r.logs = nil, nil
	for _, f := range []string{log.CleanShutdownFileName, log.RecoveryPointCheckpointFile} {
		if err := os.Remove(filepath.Join(r.dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	lost, err := dropTail(filepath.Join(r.dir, goldenTP.String()), lose)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "r%d crashed", id)
	for _, v := range lost {
		if c.unflushed == nil {
			c.unflushed = map[string]bool{}
		}
		c.unflushed[strings.Split(v, "@")[0]] = true
	}
	if len(lost) > 0 {
		fmt.Fprintf(out, ", unflushed and lost: %s", strings.Join(lost, " "))
	}
	out.WriteString("\n")
	return nil
}

// dropTail cuts the last n batches off the newest segment of a partition
// directory and describes them.
func dropTail(dir string, n int) ([]string, error) {
	if n == 0 {
		return nil, nil
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(segs) == 0 {
		return nil, fmt.Errorf("no segment in %s: %v", dir, err)
	}
	sort.Strings(segs)
	path := segs[len(segs)-1]
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var starts []int
	for pos := 0; pos < len(data); {
		h, err := record.ParseHeader(data[pos:])
		if err != nil || h.Length <= 0 || h.Size() > len(data)-pos {
			break
		}
		starts = append(starts, pos)
		pos += h.Size()
	}
	if len(starts) < n {
		return nil, fmt.Errorf("%s holds %d batches, cannot lose %d", path, len(starts), n)
	}
	cut := starts[len(starts)-n]
	lost := describeBatches(data[cut:])
	if err := os.Truncate(path, int64(cut)); err != nil {
		return nil, err
	}
	return lost, nil
}

func (c *goldenCluster) restart(id int32, out *strings.Builder) error {
	r, err := c.replica(id)
	if err != nil {
		return err
	}
	if r.m != nil {
		return fmt.Errorf("replica %d is up", id)
	}
	if err := c.start(r); err != nil {
		return err
	}
	fmt.Fprintf(out, "r%d restarted: %s\n", id, c.describe(r))
	return nil
}

func (c *goldenCluster) print(out *strings.Builder) {
	for _, r := range c.replicas {
		fmt.Fprintf(out, "r%d: %s\n", r.id, c.describe(r))
	}
	acked := make([]string, len(c.acked))
	for i, p := range c.acked {
		acked[i] = fmt.Sprintf("%s@%d", p.value, p.offset)
	}
	fmt.Fprintf(out, "acknowledged: [%s]\n", strings.Join(acked, " "))
}

// describe is a replica's role, log end, high watermark, leader epoch
// cache and records (offset:epoch:value).
func (c *goldenCluster) describe(r *goldenReplica) string {
	if r.m == nil {
		return "down"
	}
	p, ok := r.m.Hosted(goldenTP)
	if !ok {
		return "not hosting"
	}
	l := p.Log()
	role := "follower"
	if p.IsLeader() {
		role = "leader"
	}
	var epochs []string
	for _, e := range l.EpochEntries() {
		epochs = append(epochs, fmt.Sprintf("%d@%d", e.Epoch, e.StartOffset))
	}
	return fmt.Sprintf("%s epoch=%d leo=%d hw=%d epochs=[%s] log=[%s]", role, p.LeaderEpoch(), l.LogEndOffset(),
		l.HighWatermark(), strings.Join(epochs, " "), strings.Join(c.records(l), " "))
}

// records is the whole log as offset:epoch:value.
func (c *goldenCluster) records(l *log.Log) []string {
	c.t.Helper()
	if l.LogEndOffset() == l.LogStartOffset() {
		return nil
	}
	info, err := l.Read(l.LogStartOffset(), 1<<30, l.LogEndOffset(), true)
	if err != nil {
		c.t.Fatalf("read %s: %v", l.Dir(), err)
	}
	return describeRecords(c.t, info.Records)
}

func describeRecords(t *testing.T, b []byte) []string {
	t.Helper()
	var out []string
	for len(b) > 0 {
		h, recs, err := readBatch(b)
		if err != nil {
			t.Fatalf("read batch: %v", err)
		}
		for _, r := range recs {
			out = append(out, fmt.Sprintf("%d:e%d:%s", h.BaseOffset+int64(r.OffsetDelta), h.PartitionLeaderEpoch, r.Value))
		}
		b = b[h.Size():]
	}
	return out
}

func describeBatches(b []byte) []string {
	var out []string
	for len(b) > 0 {
		h, recs, err := readBatch(b)
		if err != nil {
			return append(out, fmt.Sprintf("(unreadable: %v)", err))
		}
		for _, r := range recs {
			out = append(out, fmt.Sprintf("%s@%d", r.Value, h.BaseOffset+int64(r.OffsetDelta)))
		}
		b = b[h.Size():]
	}
	return out
}

// check asserts Kafka's guarantees: every acknowledged record is on the
// leader at its offset, and every live replica holds the same log as the
// leader (the script fetches until they caught up). Failures also fail the
// test.
func (c *goldenCluster) check(out *strings.Builder) {
	mp, ok := c.meta()
	if !ok {
		c.t.Fatal("check before the partition exists")
	}
	leader := c.replicas[mp.Leader-1]
	if leader.m == nil {
		c.t.Fatalf("check: leader %d is down", mp.Leader)
	}
	lp, _ := leader.m.Hosted(goldenTP)
	want := c.records(lp.Log())
	var problems, excused []string
	for _, p := range c.acked {
		idx := slices.IndexFunc(want, func(s string) bool { return strings.HasPrefix(s, strconv.FormatInt(p.offset, 10)+":") })
		if idx >= 0 && strings.HasSuffix(want[idx], ":"+p.value) {
			continue
		}
		if c.unflushed[p.value] {
			// Kafka acknowledges without fsync (flush.messages): a record
			// whose only copies were unflushed when power failed is lost.
			excused = append(excused, p.value)
			continue
		}
		problems = append(problems, fmt.Sprintf("acknowledged %s@%d is not on leader r%d", p.value, p.offset, mp.Leader))
	}
	if len(excused) > 0 {
		fmt.Fprintf(out, "acknowledged but lost with the unflushed tails of the crashed replicas: %s\n", strings.Join(excused, " "))
	}
	var same []string
	for _, r := range c.replicas {
		if r.m == nil {
			continue
		}
		p, ok := r.m.Hosted(goldenTP)
		if !ok {
			continue
		}
		if got := c.records(p.Log()); !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("r%d differs from leader r%d: %v vs %v", r.id, mp.Leader, got, want))
			continue
		}
		same = append(same, "r"+strconv.Itoa(int(r.id)))
	}
	for _, p := range problems {
		c.t.Error(p)
		fmt.Fprintf(out, "FAIL: %s\n", p)
	}
	if len(problems) == 0 {
		fmt.Fprintf(out, "ok: %d acknowledged records on leader r%d; %s hold the same log\n", len(c.acked)-len(excused), mp.Leader, strings.Join(same, " "))
	}
}

// readBatch reads the first batch of b.
func readBatch(b []byte) (record.BatchHeader, []record.Record, error) {
	h, err := record.ParseHeader(b)
	if err != nil {
		return h, nil, err
	}
	if h.Size() > len(b) {
		return h, nil, fmt.Errorf("batch at %d of %d bytes, %d left", h.BaseOffset, h.Size(), len(b))
	}
	return record.ReadRecords(b[:h.Size()])
}
