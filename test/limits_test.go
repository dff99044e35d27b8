//go:build e2e

package test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExcessivePartitionRequests: CreateTopics and CreatePartitions asking
// for 2,147,483,647 partitions, with and without validate_only, are refused
// with POLICY_VIOLATION before anything is allocated for them (issue 20,
// item 1: replica placement used to build every assignment first and ran the
// process out of memory). The broker's peak RSS stays small and a normal
// client is served afterwards.
func TestExcessivePartitionRequests(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	cl := newKgo(t, b)
	createTopic(t, cl, "limits-grow", 1, nil)
	rc := dialRaw(t, b)

	for _, validateOnly := range []bool{true, false} {
		ct := kmsg.NewPtrCreateTopicsRequest()
		ct.Version, ct.ValidateOnly, ct.TimeoutMillis = 7, validateOnly, 30000
		topic := kmsg.NewCreateTopicsRequestTopic()
		topic.Topic, topic.NumPartitions, topic.ReplicationFactor = "limits-huge", math.MaxInt32, 1
		ct.Topics = append(ct.Topics, topic)
		resp := rc.roundTrip(ct).(*kmsg.CreateTopicsResponse)
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("CreateTopics validate_only=%v of MaxInt32 partitions: %+v", validateOnly, resp.Topics)
		}

		cp := kmsg.NewPtrCreatePartitionsRequest()
		cp.Version, cp.ValidateOnly, cp.TimeoutMillis = 3, validateOnly, 30000
		grow := kmsg.NewCreatePartitionsRequestTopic()
		grow.Topic, grow.Count = "limits-grow", math.MaxInt32
		cp.Topics = append(cp.Topics, grow)
		presp := rc.roundTrip(cp).(*kmsg.CreatePartitionsResponse)
		if len(presp.Topics) != 1 || presp.Topics[0].ErrorCode != kerr.PolicyViolation.Code {
			t.Fatalf("CreatePartitions validate_only=%v to MaxInt32 partitions: %+v", validateOnly, presp.Topics)
		}
	}

	// The peak resident size (VmHWM) covers any transient allocation; an
	// idle broker holds well under 100 MiB.
	if peak := procStatus(t, b.cmd.Process.Pid, "VmHWM"); peak > 512<<20 {
		t.Errorf("peak RSS %d MiB after the refused requests", peak>>20)
	}
	createTopic(t, cl, "limits-after", 3, nil)
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: "limits-after", Value: []byte("still served")}).FirstErr(); err != nil {
		t.Fatalf("produce after the refused requests: %v", err)
	}
}

// TestDeleteLongTopicName: a topic with a 249-character name (Kafka's
// longest) is deleted through the Kafka API, its partition directories
// renamed under a shortened name and removed; a copy of such a directory
// put back while the broker is down (as a broker that could not rename it
// left it) is removed as a stray at the next start, without an ERROR
// (issue 20, item 10: the rename failed with ENAMETOOLONG on every start).
func TestDeleteLongTopicName(t *testing.T) {
	t.Parallel()
	b := startBroker(t, "log.segment.delete.delay.ms=100")
	cl := newKgo(t, b)
	adm := kadm.NewClient(cl)
	topic := strings.Repeat("x", 249)
	createTopic(t, cl, topic, 2, nil)
	if err := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: 1, Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	partitionDirs := func() []string {
		var out []string
		entries, _ := os.ReadDir(b.dataDir)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "xxxxxxxx") {
				out = append(out, e.Name())
			}
		}
		return out
	}
	waitNoDirs := func(what string) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for len(partitionDirs()) > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("%s: directories left: %q\n%s", what, partitionDirs(), b.log())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if dirs := partitionDirs(); len(dirs) != 2 {
		t.Fatalf("partition dirs: %q", dirs)
	}

	// Keep a copy of partition 1's directory to put back later.
	saved := filepath.Join(t.TempDir(), "saved")
	b.stop()
	if err := os.CopyFS(saved, os.DirFS(filepath.Join(b.dataDir, topic+"-1"))); err != nil {
		t.Fatal(err)
	}
	b.start()

	resp, err := adm.DeleteTopics(ctxT(t, 30*time.Second), topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("delete topic: %v %v", err, resp[topic].Err)
	}
	waitNoDirs("after DeleteTopics")

	b.stop()
	if err := os.CopyFS(filepath.Join(b.dataDir, topic+"-1"), os.DirFS(saved)); err != nil {
		t.Fatal(err)
	}
	b.start()
	waitNoDirs("after a restart with the stray directory")
	logged, err := os.ReadFile(b.logPath) // this start's whole log
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), `msg="removing stray log"`) {
		t.Errorf("the copied directory was not removed as a stray:\n%s", b.log())
	}
	for _, line := range strings.Split(string(logged), "\n") {
		if strings.Contains(line, "level=ERROR") {
			t.Errorf("ERROR logged: %s", line)
		}
	}
}

// TestBulkCreateKeepsHeartbeats: while the broker creates the logs of 3,000
// new partitions, its heartbeats keep reaching the controller and it is
// never fenced; afterwards every partition takes a produce (issue 20, item
// 11: the broker published the new metadata on the quorum's commit path,
// which the controller's append waited for, so creating 9,999 logs one
// fsync after another held up the controller and with it the broker's
// heartbeats until its session ran out). A short session makes any stall
// visible.
func TestBulkCreateKeepsHeartbeats(t *testing.T) {
	t.Parallel()
	const partitions = 3000
	b := startBroker(t, "broker.session.timeout.ms=4000", "broker.heartbeat.interval.ms=250")
	cl := newKgo(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	adm := kadm.NewClient(cl)
	start := time.Now()
	// The answer comes once this broker hosts the partitions: the polling
	// below runs meanwhile.
	created := make(chan error, 1)
	go func() {
		resp, err := adm.CreateTopic(ctxT(t, 5*time.Minute), partitions, 1, nil, "bulk")
		if err == nil {
			err = resp.Err
		}
		created <- err
	}()
	var createErr error
	answered := false
	logDirs := func() int {
		entries, _ := os.ReadDir(b.dataDir)
		n := 0
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "bulk-") {
				n++
			}
		}
		return n
	}
	// The signs of a stalled heartbeat path: the broker's heartbeat timing
	// out or refused, the controller fencing it.
	stalls := func() []string {
		logged, _ := os.ReadFile(b.logPath)
		var out []string
		for _, line := range strings.Split(string(logged), "\n") {
			if strings.Contains(line, `msg="heartbeat failed"`) || strings.Contains(line, `msg="heartbeat refused"`) ||
				strings.Contains(line, "to=FENCED") || strings.Contains(line, `msg="fenced by the controller"`) {
				out = append(out, line)
			}
		}
		return out
	}
	deadline := time.Now().Add(5 * time.Minute)
	for !answered || logDirs() < partitions {
		select {
		case createErr = <-created:
			answered = true
			if createErr != nil {
				t.Fatalf("create %d partitions: %v", partitions, createErr)
			}
		default:
		}
		if s := stalls(); len(s) > 0 {
			t.Fatalf("heartbeats stalled with %d of %d logs created:\n%s", logDirs(), partitions, strings.Join(s, "\n"))
		}
		desc := kmsg.NewPtrDescribeClusterRequest()
		desc.Version, desc.IncludeFencedBrokers = 2, true
		if resp, err := desc.RequestWith(ctxT(t, 30*time.Second), cl); err != nil {
			t.Fatalf("describe cluster: %v", err)
		} else if len(resp.Brokers) != 1 || resp.Brokers[0].IsFenced {
			t.Fatalf("brokers while creating: %+v", resp.Brokers)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d logs created after 5 minutes", logDirs(), partitions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("%d partitions created in %v", partitions, time.Since(start).Round(time.Millisecond))
	for _, p := range []int32{0, partitions / 2, partitions - 1} {
		if err := cl.ProduceSync(ctxT(t, 60*time.Second), &kgo.Record{Topic: "bulk", Partition: p, Value: []byte("after")}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", p, err)
		}
	}
	if s := stalls(); len(s) > 0 {
		t.Fatalf("heartbeats stalled:\n%s", strings.Join(s, "\n"))
	}
	ends, err := adm.ListEndOffsets(ctxT(t, 30*time.Second), "bulk")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := ends.Lookup("bulk", partitions-1); o.Offset != 1 {
		t.Fatalf("end offset of the last partition: %+v", o)
	}
}
