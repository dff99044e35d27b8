//go:build e2e

package test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// debugFlags make the log package report, per partition, whether it opened
// after a clean shutdown ("loaded log ... clean_shutdown=...", Debug level).
var debugFlags = []string{"--log-level", "debug"}

// TestRestartClean writes with every codec, stops with SIGTERM, starts on
// the same data dir, and checks topics, topic configs (one set after
// creation with IncrementalAlterConfigs), every record, and that produce
// continues at the log end offset.
func TestRestartClean(t *testing.T) {
	t.Parallel()
	const partitions, perPartition = 3, 400
	b := startBrokerFlags(t, debugFlags)
	cl := newKgo(t, b)
	adm := kadm.NewClient(cl)
	for _, codec := range codecs {
		createTopic(t, cl, topicName("restart", codec), partitions, map[string]*string{"retention.ms": strp("7200000")})
	}
	altered := topicName("restart", "none")
	resp, err := adm.AlterTopicConfigs(ctxT(t, 20*time.Second), []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "segment.bytes", Value: strp("2097152")},
		{Op: kadm.DeleteConfig, Name: "retention.ms"},
	}, altered)
	if err == nil {
		_, err = resp.On(altered, nil)
	}
	if err != nil {
		t.Fatalf("alter configs of %s: %v", altered, err)
	}

	values := func(codec string, gen int) map[int32][]string {
		out := map[int32][]string{}
		for i := 0; i < partitions*perPartition; i++ {
			p := int32(i % partitions)
			out[p] = append(out[p], fmt.Sprintf("%s-gen%d-%05d-%s", codec, gen, i, strings.Repeat("x", 50)))
		}
		return out
	}
	produce := func(b *broker, codec string, gen int, startOffset int64) {
		t.Helper()
		pcl := newKgo(t, b, kgo.ProducerBatchCompression(kgoCodec(t, codec)), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		var recs []*kgo.Record
		for p, vs := range values(codec, gen) {
			for _, v := range vs {
				recs = append(recs, &kgo.Record{Topic: topicName("restart", codec), Partition: p, Value: []byte(v)})
			}
		}
		results := pcl.ProduceSync(ctxT(t, 60*time.Second), recs...)
		next := map[int32]int64{}
		for _, r := range results {
			if r.Err != nil {
				t.Fatalf("produce %s gen %d: %v", codec, gen, r.Err)
			}
			p := r.Record.Partition
			if want := startOffset + next[p]; r.Record.Offset != want {
				t.Fatalf("produce %s gen %d: %d/%d, want offset %d", codec, gen, p, r.Record.Offset, want)
			}
			next[p]++
		}
		pcl.Close()
	}
	for _, codec := range codecs {
		produce(b, codec, 0, 0)
	}

	b.restart()
	cl = newKgo(t, b)
	adm = kadm.NewClient(cl)

	// The log package reports the clean shutdown it found.
	logText := fullLog(t, b)
	for _, codec := range codecs {
		for p := range partitions {
			checkLoadedLog(t, logText, fmt.Sprintf("%s-%d", topicName("restart", codec), p), true)
		}
	}

	// Topics and partitions.
	details, err := adm.ListTopics(ctxT(t, 20*time.Second))
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	for _, codec := range codecs {
		d, ok := details[topicName("restart", codec)]
		if !ok || d.Err != nil || len(d.Partitions) != partitions {
			t.Errorf("topic %s after restart: present %v, err %v, %d partitions", topicName("restart", codec), ok, d.Err, len(d.Partitions))
		}
	}

	// Topic configs, including the one altered after creation.
	configs, err := adm.DescribeTopicConfigs(ctxT(t, 20*time.Second), topicNames("restart")...)
	if err != nil {
		t.Fatalf("describe topic configs: %v", err)
	}
	for _, rc := range configs {
		if rc.Err != nil {
			t.Errorf("describe %s: %v", rc.Name, rc.Err)
			continue
		}
		got := map[string]kadm.Config{}
		for _, c := range rc.Configs {
			got[c.Key] = c
		}
		want := map[string][2]any{"retention.ms": {"7200000", kmsg.ConfigSourceDynamicTopicConfig}}
		if rc.Name == altered {
			want = map[string][2]any{
				"retention.ms":  {"604800000", kmsg.ConfigSourceDefaultConfig},
				"segment.bytes": {"2097152", kmsg.ConfigSourceDynamicTopicConfig},
			}
		}
		for k, w := range want {
			if c := got[k]; c.MaybeValue() != w[0] || c.Source != w[1] {
				t.Errorf("%s %s after restart = %q (source %v), want %v", rc.Name, k, c.MaybeValue(), c.Source, w)
			}
		}
	}

	// Every record, then produce continues at the end.
	for _, codec := range codecs {
		topic := topicName("restart", codec)
		end := endOffsets(t, cl, topic)
		recs := consumeAll(t, b, topic, end)
		want := values(codec, 0)
		for p := range int32(partitions) {
			checkContiguous(t, topic, p, recs[p], perPartition)
			for i, r := range recs[p] {
				if string(r.Value) != want[p][i] {
					t.Fatalf("%s/%d offset %d: %q, want %q", topic, p, i, r.Value, want[p][i])
				}
			}
		}
		checkStoredCodec(t, b, topic, 1, codec)
		produce(b, codec, 1, perPartition)
		if end := endOffsets(t, cl, topic); end[0] != 2*perPartition {
			t.Errorf("%s end offsets after second produce: %v", topic, end)
		}
	}
}

// TestRestartKill9 kills the broker with SIGKILL while five producers (one
// per codec, acks=1) are writing, three times on the same data dir. After
// each restart every acknowledged record must be at its offset with its
// value, the offsets must be contiguous from 0 (no holes), and produce must
// continue at the log end.
func TestRestartKill9(t *testing.T) {
	t.Parallel()
	const partitions, minAcksPerCodec = 3, 1500
	b := startBrokerFlags(t, debugFlags)
	setup := newKgo(t, b)
	// Small segments (Kafka's minimum) and large-ish records: segments roll
	// every few hundred acks, so kills also land around rolls.
	smallSegments := map[string]*string{"segment.bytes": strp("1048576")}
	for _, codec := range codecs {
		createTopic(t, setup, topicName("crash", codec), partitions, smallSegments)
	}
	setup.Close()

	// acked[topic][partition][offset] = value, over all rounds.
	acked := map[string]map[int32]map[int64]string{}
	for _, codec := range codecs {
		acked[topicName("crash", codec)] = map[int32]map[int64]string{}
	}
	for round := range 3 {
		t.Logf("round %d", round)
		acks := produceUntilKilled(t, b, round, minAcksPerCodec)
		total := 0
		for _, a := range acks {
			m := acked[a.topic]
			if m[a.partition] == nil {
				m[a.partition] = map[int64]string{}
			}
			if prev, dup := m[a.partition][a.offset]; dup {
				t.Fatalf("%s/%d offset %d acknowledged twice: %q and %q", a.topic, a.partition, a.offset, prev, a.value)
			}
			m[a.partition][a.offset] = a.value
			total++
		}
		t.Logf("round %d: %d acknowledged records before SIGKILL", round, total)

		b.start()
		logText := fullLog(t, b)
		for _, codec := range codecs {
			for p := range partitions {
				checkLoadedLog(t, logText, fmt.Sprintf("%s-%d", topicName("crash", codec), p), false)
			}
		}
		verifyAcked(t, b, acked)
	}
}

type ack struct {
	topic     string
	partition int32
	offset    int64
	value     string
}

// produceUntilKilled runs one acks=1 producer per codec until each has at
// least minAcks acknowledgements, kills the broker with SIGKILL while they
// are still producing, and returns every acknowledged record.
func produceUntilKilled(t *testing.T, b *broker, round, minAcks int) []ack {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		acks     []ack
		perCodec = map[string]int{}
		wg       sync.WaitGroup // producer loops
		inflight sync.WaitGroup // promises not yet called
		clients  []*kgo.Client
	)
	for _, codec := range codecs {
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(b.addr()),
			kgo.DisableIdempotentWrite(),
			kgo.RequiredAcks(kgo.LeaderAck()),
			kgo.ProducerBatchCompression(kgoCodec(t, codec)),
			kgo.ProducerLinger(time.Millisecond),
			kgo.MaxBufferedRecords(2000),
		)
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		topic := topicName("crash", codec)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; ctx.Err() == nil; seq++ {
				value := fmt.Sprintf("r%d-%s-%07d-%s", round, codec, seq, strings.Repeat("y", 400))
				inflight.Add(1)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(value)}, func(r *kgo.Record, err error) {
					defer inflight.Done()
					if err != nil {
						return
					}
					mu.Lock()
					acks = append(acks, ack{r.Topic, r.Partition, r.Offset, string(r.Value)})
					perCodec[codec]++
					mu.Unlock()
				})
			}
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		enough := len(perCodec) == len(codecs)
		for _, n := range perCodec {
			enough = enough && n >= minAcks
		}
		counts := fmt.Sprint(perCodec)
		mu.Unlock()
		if enough {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d: producers acknowledged only %s within 60s:\n%s", round, counts, b.log())
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.kill9()
	cancel()
	wg.Wait()
	for _, cl := range clients {
		cl.Close() // fails what is still buffered
	}
	inflight.Wait()
	mu.Lock()
	defer mu.Unlock()
	return acks
}

// verifyAcked checks, after a restart, that every acknowledged record is
// readable at its offset with its value, that each partition's offsets run
// from 0 to the log end without holes, and that produce continues there.
func verifyAcked(t *testing.T, b *broker, acked map[string]map[int32]map[int64]string) {
	t.Helper()
	cl := newKgo(t, b, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for topic, byPartition := range acked {
		end := endOffsets(t, cl, topic)
		recs := consumeAll(t, b, topic, end)
		t.Logf("%s: end offsets %v after restart", topic, end)
		for p, offsets := range byPartition {
			var maxAcked int64 = -1
			for o := range offsets {
				maxAcked = max(maxAcked, o)
			}
			if end[p] <= maxAcked {
				t.Errorf("%s/%d: log end offset %d after restart, but offset %d was acknowledged", topic, p, end[p], maxAcked)
			}
			checkContiguous(t, topic, p, recs[p], end[p])
			for o, v := range offsets {
				if o >= int64(len(recs[p])) {
					t.Errorf("%s/%d: acknowledged offset %d missing (read %d records)", topic, p, o, len(recs[p]))
					continue
				}
				if got := string(recs[p][o].Value); got != v {
					t.Errorf("%s/%d offset %d: %q, acknowledged %q", topic, p, o, got, v)
				}
			}
		}
		// Further produce lands at the log end of each partition.
		for p := range int32(len(end)) {
			r := cl.ProduceSync(ctxT(t, 30*time.Second), &kgo.Record{Topic: topic, Partition: p, Value: []byte("after-restart")})
			rec, err := r.First()
			if err != nil {
				t.Fatalf("produce to %s/%d after restart: %v", topic, p, err)
			}
			if rec.Offset != end[p] {
				t.Errorf("produce to %s/%d after restart landed at %d, want the log end %d", topic, p, rec.Offset, end[p])
			}
		}
	}
	cl.Close()
}

// fullLog reads the whole server log of the current (last started) process.
func fullLog(t *testing.T, b *broker) string {
	t.Helper()
	data, err := os.ReadFile(b.logPath)
	if err != nil {
		t.Fatalf("read server log: %v", err)
	}
	return string(data)
}

// checkLoadedLog looks for the log package's "loaded log" line of a
// partition and checks what it says about the shutdown before.
func checkLoadedLog(t *testing.T, logText, partition string, clean bool) {
	t.Helper()
	for _, line := range strings.Split(logText, "\n") {
		if strings.Contains(line, `msg="loaded log"`) && strings.Contains(line, " partition="+partition+" ") {
			if want := fmt.Sprintf("clean_shutdown=%v", clean); !strings.Contains(line, want) {
				t.Errorf("partition %s: %q does not say %s", partition, line, want)
			}
			return
		}
	}
	t.Errorf("server log has no \"loaded log\" line for partition %s", partition)
}

func topicNames(prefix string) []string {
	var out []string
	for _, c := range codecs {
		out = append(out, topicName(prefix, c))
	}
	return out
}
