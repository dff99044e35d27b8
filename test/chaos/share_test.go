//go:build chaos

package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The share-group workload (issue 16): five share consumers, each a
// process of its own (this test binary run again, see shareConsumerMain),
// read a two-partition topic of a three-node cluster; one is killed -9
// while it holds a batch it has not acknowledged. Each consumer writes
// every record it is handed and every acknowledgement's outcome to its
// stdout, which this test reads into the history; CheckShare then proves
// each record was accepted once (or archived at the delivery limit), none
// lost, and the share-partition start offsets reached the log ends.

const (
	shareTopic     = "share-jobs"
	shareGroup     = "share-workers"
	shareRecords   = 2000
	sharePoisonGap = 250 // every 250th record is released by every consumer, until archived
	shareLimit     = 5   // group.share.delivery.count.limit's default
	// shareConsumerEnv names a consumer child's settings (JSON); set, the
	// test binary runs as that consumer instead of running tests.
	shareConsumerEnv = "GREGOR_CHAOS_SHARE_CONSUMER"
)

// shareConsumerArgs is what a consumer child is told.
type shareConsumerArgs struct {
	Name           string
	Seeds          []string
	Topic, Group   string
	HistoryStartNs int64         // the parent history's start, for Op times
	Work           time.Duration // the time each batch takes to "process"
}

func TestShareGroupConsumerKilled(t *testing.T) {
	// A lock of 5s (the group minimum lowered to allow it) so that the
	// killed consumer's records come back soon even if only the lock's
	// expiry frees them.
	c := startCluster(t, "group.share.min.record.lock.duration.ms=1000", "group.share.record.lock.duration.ms=5000")
	c.createTopic(shareTopic, 2, nil)
	adm := kadm.NewClient(c.client())
	c.waitFor("share.auto.offset.reset=earliest", 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		res := kmsg.NewIncrementalAlterConfigsRequestResource()
		res.ResourceType, res.ResourceName = kmsg.ConfigResourceTypeGroupConfig, shareGroup
		cfg := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		cfg.Name, cfg.Value = "share.auto.offset.reset", kmsg.StringPtr("earliest")
		res.Configs = append(res.Configs, cfg)
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, c.client())
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.Resources[0].ErrorCode)
	})
	h := NewHistory()
	// The history is the evidence of a failure: kept with the cluster.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		path := c.dir + "/share-history.jsonl"
		if f, err := os.Create(path); err == nil {
			h.WriteJSON(f)
			f.Close()
			t.Logf("history: %s", path)
		}
	})
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}

	// The consumers. The first is the victim: it starts alone, and is
	// killed -9 as soon as it is handed a batch after one acknowledged
	// batch, while it "processes" it (one second per batch); the others
	// start once it acknowledged its first batch, so that it surely has
	// one to die holding.
	type child struct {
		name string
		cmd  *exec.Cmd
		done chan struct{} // its stdout read to the end
	}
	var children []*child
	killed := make(chan string, 1)
	victimAccepted := make(chan struct{}) // closed at the victim's first acknowledged acceptance
	startConsumer := func(i int) {
		args := shareConsumerArgs{Name: fmt.Sprintf("share-consumer-%d", i), Seeds: c.seeds(), Topic: shareTopic, Group: shareGroup,
			HistoryStartNs: h.start.UnixNano(), Work: time.Second}
		enc, _ := json.Marshal(args)
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), shareConsumerEnv+"="+string(enc))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		ch := &child{name: args.Name, cmd: cmd, done: make(chan struct{})}
		children = append(children, ch)
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		victim := i == 0
		go func() {
			defer close(ch.done)
			accepted, dead := false, false
			readOps(out, func(op Op) {
				h.Add(op)
				switch {
				case !victim || dead:
				case op.F == FShareAck && op.Outcome == OK && op.Ack == "accept":
					if !accepted {
						close(victimAccepted)
					}
					accepted = true
				case op.F == FShareDeliver && accepted:
					invoke := h.Now()
					cmd.Process.Signal(syscall.SIGKILL)
					h.Add(Op{Process: "nemesis", F: FFault, Outcome: OK, Invoke: invoke, Value: "kill-consumer", Err: ch.name})
					dead = true
					killed <- ch.name
				}
			})
		}()
	}
	startConsumer(0)

	// The producer: acks=all, one value once, spread over both partitions.
	prod := c.client(kgo.RequiredAcks(kgo.AllISRAcks()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(60*time.Second))
	for i := 0; i < shareRecords; i += 20 {
		if i == 200 {
			// The others, and the rest of the records, once the victim
			// accepted a batch of the first 200.
			select {
			case <-victimAccepted:
			case <-time.After(120 * time.Second):
				t.Fatal("the victim consumer accepted no batch of the first 200 records within 120s")
			}
			for j := 1; j < 5; j++ {
				startConsumer(j)
			}
		}
		var batch []*kgo.Record
		invoke := h.Now()
		for j := i; j < i+20 && j < shareRecords; j++ {
			v := fmt.Sprintf("job-%d", j)
			if j%sharePoisonGap == sharePoisonGap-1 {
				v = "poison-" + v
			}
			batch = append(batch, &kgo.Record{Topic: shareTopic, Partition: int32(j % 2), Value: []byte(v)})
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		results := prod.ProduceSync(ctx, batch...)
		cancel()
		for _, r := range results {
			op := Op{Process: "producer", F: FSend, Invoke: invoke, Topic: shareTopic, Partition: r.Record.Partition,
				Value: string(r.Record.Value), Outcome: OK, Offset: r.Record.Offset}
			if r.Err != nil {
				op.Outcome, op.Offset, op.Err = Info, -1, r.Err.Error()
			}
			h.Add(op)
		}
		time.Sleep(50 * time.Millisecond) // a steady trickle, consumed as it arrives
	}
	ends, err := listEnds(c, shareTopic)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("produced %d records, log ends %v", shareRecords, ends)
	select {
	case name := <-killed:
		t.Logf("%s killed -9 mid-batch", name)
	case <-time.After(120 * time.Second):
		t.Fatal("the victim consumer was not handed a batch after its first within 120s")
	}

	// Every record accepted or archived: the start offsets reach the ends.
	startOffsets := func() (map[int32]int64, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := adm.DescribeShareGroupOffsets(ctx, shareGroup)
		if err == nil {
			err = d.Error()
		}
		if err != nil {
			return nil, err
		}
		got := map[int32]int64{}
		for p, o := range d[shareGroup].Offsets[shareTopic] {
			if o.Err != nil {
				return nil, fmt.Errorf("partition %d: %w", p, o.Err)
			}
			if o.StartOffset >= ends[p] && o.Lag != 0 {
				// Resolved up to the end: no lag (KIP-1226's, from
				// the end offset the partition's leader answers).
				return nil, fmt.Errorf("partition %d: start offset %d at the end %d, lag %d", p, o.StartOffset, ends[p], o.Lag)
			}
			got[p] = o.StartOffset
		}
		return got, nil
	}
	if err := poll(240*time.Second, func() error {
		got, err := startOffsets()
		if err != nil {
			return err
		}
		for p, end := range ends {
			if got[p] < end {
				return fmt.Errorf("start offsets %v, log ends %v", got, ends)
			}
		}
		return nil
	}); err != nil {
		t.Errorf("the share group did not resolve every record within 240s: %v", err)
	}

	// Stop the survivors (they finish their batch and leave), then read
	// the start offsets the check uses.
	for _, ch := range children[1:] {
		ch.cmd.Process.Signal(syscall.SIGTERM)
	}
	for _, ch := range children {
		select {
		case <-ch.done:
		case <-time.After(90 * time.Second):
			t.Errorf("%s did not stop within 90s of SIGTERM", ch.name)
			ch.cmd.Process.Kill()
			<-ch.done
		}
		err := ch.cmd.Wait()
		if ch != children[0] && err != nil {
			t.Errorf("%s: %v", ch.name, err)
		}
	}
	final, err := startOffsets()
	if err != nil {
		t.Errorf("final DescribeShareGroupOffsets: %v", err)
	}
	rep, counts := CheckShare(ShareConfig{Topic: shareTopic, Group: shareGroup, DeliveryLimit: shareLimit, Ends: ends, StartOffsets: final}, h.Ops())
	t.Logf("%s\n%s", counts, rep.Summary())
	var held int
	for _, op := range h.Ops() {
		if op.F == FShareDeliver && op.Process == children[0].name {
			held++
		} else if op.F == FShareAck && op.Process == children[0].name {
			held--
		}
	}
	if held <= 0 {
		t.Errorf("the victim held no unacknowledged records when it was killed")
	}
	if counts.Archived != shareRecords/sharePoisonGap {
		t.Errorf("%d records archived at the delivery limit, want the %d poison records", counts.Archived, shareRecords/sharePoisonGap)
	}
	if len(rep.Anomalies) > 0 {
		t.Errorf("%d anomalies", len(rep.Anomalies))
	}
}

// readOps decodes a consumer child's stdout, one Op a line.
func readOps(r io.Reader, each func(Op)) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var op Op
		if err := json.Unmarshal(sc.Bytes(), &op); err != nil {
			fmt.Fprintf(os.Stderr, "share consumer output %q: %v\n", sc.Text(), err)
			continue
		}
		each(op)
	}
}

// shareConsumerMain is a consumer child: it polls the share group, writes
// each record it is handed, works on the batch, accepts it (releases the
// poison records), flushes the acknowledgements and writes each one's
// outcome, until SIGTERM; then it leaves the group.
func shareConsumerMain(spec string) int {
	var a shareConsumerArgs
	if err := json.Unmarshal([]byte(spec), &a); err != nil {
		fmt.Fprintln(os.Stderr, "share consumer:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	now := func() time.Duration { return time.Duration(time.Now().UnixNano() - a.HistoryStartNs) }
	enc := json.NewEncoder(os.Stdout) // unbuffered: each line is out before the next step
	var mu sync.Mutex
	var results kgo.ShareAckResults
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Seeds...), kgo.DialTimeout(3*time.Second),
		kgo.ShareGroup(a.Group), kgo.ConsumeTopics(a.Topic), kgo.ShareMaxRecords(40), kgo.ShareMaxRecordsStrict(),
		kgo.ShareAckCallback(func(_ *kgo.Client, rs kgo.ShareAckResults) {
			mu.Lock()
			results = append(results, rs...)
			mu.Unlock()
		}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "share consumer:", err)
		return 2
	}
	defer cl.Close()
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		var batch []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			batch = append(batch, r)
			t := now()
			enc.Encode(Op{Process: a.Name, F: FShareDeliver, Outcome: OK, Invoke: t, Complete: t, Group: a.Group,
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), Delivery: r.DeliveryCount()})
		})
		if len(batch) == 0 {
			continue
		}
		time.Sleep(a.Work)
		mu.Lock()
		results = nil
		mu.Unlock()
		invoke := now()
		var accept, release []*kgo.Record
		for _, r := range batch {
			if strings.HasPrefix(string(r.Value), "poison-") {
				release = append(release, r)
			} else {
				accept = append(accept, r)
			}
		}
		// MarkAcks with no records marks every record of the poll: only
		// with some.
		if len(accept) > 0 {
			cl.MarkAcks(kgo.AckAccept, accept...)
		}
		if len(release) > 0 {
			cl.MarkAcks(kgo.AckRelease, release...)
		}
		fctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		ferr := cl.FlushAcks(fctx)
		cancel()
		mu.Lock()
		partErr := map[int32]error{}
		for _, r := range results {
			if r.Topic != a.Topic {
				continue
			}
			if _, seen := partErr[r.Partition]; !seen || r.Err != nil {
				partErr[r.Partition] = r.Err
			}
		}
		mu.Unlock()
		complete := now()
		for _, r := range batch {
			op := Op{Process: a.Name, F: FShareAck, Outcome: OK, Invoke: invoke, Complete: complete, Group: a.Group,
				Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Value: string(r.Value), Ack: "accept"}
			if strings.HasPrefix(op.Value, "poison-") {
				op.Ack = "release"
			}
			perr, answered := partErr[r.Partition]
			switch {
			case ferr != nil:
				op.Outcome, op.Err = Info, ferr.Error()
			case !answered:
				op.Outcome, op.Err = Info, "no result for the partition"
			case perr != nil:
				op.Outcome, op.Err = Info, perr.Error()
			}
			enc.Encode(op)
		}
	}
	return 0
}
