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
