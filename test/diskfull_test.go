//go:build e2e

package test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestDiskFullTakesLogDirOffline runs gregor with two log.dirs, one on a
// 2 MiB tmpfs, fills the small one through produce until it answers
// KAFKA_STORAGE_ERROR, and checks Kafka's log-dir failure rules: that dir is
// described offline, its partitions answer KAFKA_STORAGE_ERROR to produce and
// fetch, the partitions on the other dir go on, and after the operator gives
// the disk room and restarts, every acknowledged record is there (and none
// of the refused ones).
func TestDiskFullTakesLogDirOffline(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	small, regular := t.TempDir(), t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", small).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v: %s", err, out)
	}
	// Cleanups run last-in first-out: the broker (registered below) stops
	// before the unmount, which runs before TempDir's removal.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", small).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", small, err, out)
		}
	})
	// The metadata log lives in the first log.dir, the regular one.
	b := startBroker(t, "log.dirs="+regular+","+small)
	cl := newKgo(t, b)
	adm := kadm.NewClient(cl)
	createTopic(t, cl, "disk", 2, nil)

	// One partition lands in each dir; find the one on the tmpfs.
	onSmall, onRegular := int32(-1), int32(-1)
	dirs, err := adm.DescribeAllLogDirs(ctxT(t, 20*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic != "disk" {
				return
			}
			switch d.Dir {
			case small:
				onSmall = p.Partition
			case regular:
				onRegular = p.Partition
			}
		})
	})
	if onSmall < 0 || onRegular < 0 {
		t.Fatalf("partitions not one per dir: %+v", dirs)
	}

	// Fill the tmpfs: 16 KiB records, each acknowledged (acks=all) or not.
	p := newKgo(t, b, kgo.DefaultProduceTopic("disk"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(2), kgo.RetryBackoffFn(func(int) time.Duration { return 10 * time.Millisecond }))
	// Random bytes: the producer compresses, and the disk must fill.
	value := func(i int) []byte {
		v := make([]byte, 16<<10)
		r := rand.New(rand.NewPCG(uint64(i), 0))
		for j := range v {
			v[j] = byte(r.Uint32())
		}
		return append([]byte(fmt.Sprintf("%06d-", i)), v...)
	}
	acked := 0
	for ; ; acked++ {
		err := p.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Partition: onSmall, Value: value(acked)}).FirstErr()
		if err != nil {
			if !errors.Is(err, kerr.KafkaStorageError) {
				t.Fatalf("produce %d failed with %v, want KAFKA_STORAGE_ERROR:\n%s", acked, err, b.log())
			}
			break
		}
		if acked > 1000 {
			out, _ := exec.Command("sh", "-c", "df -h "+small+"; ls -laR "+small).CombinedOutput()
			t.Fatalf("2 MiB never filled:\n%s", out)
		}
	}
	t.Logf("%d records acknowledged before the disk filled", acked)
	if log := b.log(); !strings.Contains(log, "log dir offline") || !strings.Contains(log, small) {
		t.Fatalf("the broker did not log the failed dir:\n%s", log)
	}

	// DescribeLogDirs marks the dir offline.
	dirs, err = adm.DescribeAllLogDirs(ctxT(t, 20*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	dirs.Each(func(d kadm.DescribedLogDir) {
		switch d.Dir {
		case small:
			if !errors.Is(d.Err, kerr.KafkaStorageError) {
				t.Errorf("tmpfs dir described with %v, want KAFKA_STORAGE_ERROR", d.Err)
			}
		case regular:
			if d.Err != nil {
				t.Errorf("regular dir described with %v", d.Err)
			}
		}
	})
	// Its partition refuses fetches too.
	if code := fetchCode(t, cl, "disk", onSmall); code != kerr.KafkaStorageError.Code {
		t.Fatalf("fetch from the offline partition: %v, want KAFKA_STORAGE_ERROR", kerr.ErrorForCode(code))
	}
	// The partition on the other dir takes produce and fetch.
	for i := 0; i < 20; i++ {
		if err := p.ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Partition: onRegular, Value: value(i)}).FirstErr(); err != nil {
			t.Fatalf("produce to the healthy dir: %v", err)
		}
	}
	if got := consume(t, b, "disk", onRegular, 20); len(got) != 20 {
		t.Fatalf("consumed %d from the healthy dir, want 20", len(got))
	}

	// The operator makes room and restarts: everything acknowledged is back.
	b.stop()
	if out, err := exec.Command("mount", "-o", "remount,size=8m", small).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v: %s", err, out)
	}
	b.start()
	got := consume(t, b, "disk", onSmall, acked)
	if len(got) != acked {
		t.Fatalf("after restart %d records, want the %d acknowledged", len(got), acked)
	}
	for i, v := range got {
		if string(v) != string(value(i)) {
			t.Fatalf("record %d changed after restart", i)
		}
	}
	end, err := kadm.NewClient(newKgo(t, b)).ListEndOffsets(ctxT(t, 20*time.Second), "disk")
	if err != nil {
		t.Fatal(err)
	}
	if o, _ := end.Lookup("disk", onSmall); o.Offset != int64(acked) {
		t.Fatalf("log end %d after restart, want %d: a refused record survived", o.Offset, acked)
	}
	// And the dir takes produce again.
	if err := newKgo(t, b, kgo.DefaultProduceTopic("disk"), kgo.RecordPartitioner(kgo.ManualPartitioner())).
		ProduceSync(ctxT(t, 20*time.Second), &kgo.Record{Partition: onSmall, Value: []byte("after")}).FirstErr(); err != nil {
		t.Fatalf("produce after restart: %v", err)
	}
}

// fetchCode sends one Fetch for a partition and returns its error code.
func fetchCode(t *testing.T, cl *kgo.Client, topic string, partition int32) int16 {
	t.Helper()
	topics, err := kadm.NewClient(cl).ListTopics(ctxT(t, 20*time.Second), topic)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.MaxBytes, req.MaxWaitMillis = 1<<20, 10
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic, rt.TopicID = topic, topics[topic].ID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition, rp.PartitionMaxBytes = partition, 1<<20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 20*time.Second), cl.Broker(1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// consume reads n records of one partition from its start.
func consume(t *testing.T, b *broker, topic string, partition int32, n int) [][]byte {
	t.Helper()
	c := newKgo(t, b, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {partition: kgo.NewOffset().AtStart()}}))
	ctx := ctxT(t, 30*time.Second)
	var out [][]byte
	for len(out) < n {
		fs := c.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records of %s-%d", len(out), n, topic, partition)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch %s-%d: %v", topic, partition, err) })
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r.Value) })
	}
	return out
}
