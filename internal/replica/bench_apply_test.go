package replica

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"gregor/internal/metadata"
)

// TestBenchMetadataApply measures, with GREGOR_BENCH=1, what one committed
// metadata batch costs a broker: the loader's replay and Apply, and the
// replica manager's Publish, with N partitions in the image of which this
// broker hosts up to 2,000 (real logs: more would outrun the fd limit
// until logs open lazily), 1,000 fetches parked on hosted partitions. The
// changes: a leader change of one hosted partition, an ISR change of one
// partition hosted elsewhere, a dynamic broker config no topic reads, a
// broker default every topic inherits, and the controlled shutdown of
// another broker (every partition's ISR shrinks, a third of the leaders
// move). Figures are logged, not asserted. TMPDIR=/dev/shm keeps the setup
// (creating the logs) short.
func TestBenchMetadataApply(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") == "" {
		t.Skip("set GREGOR_BENCH=1 to measure")
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		benchMetadataApply(t, n, min(n, 2_000))
	}
}

func benchMetadataApply(t *testing.T, n, hostedCount int) {
	m := newTestManager(t)
	defer m.Close()
	const perTopic = 1000
	// This broker (1) hosts the first hostedCount partitions, with brokers
	// 2 and 3; brokers 2, 3 and 4 host the rest. Leaders rotate over the
	// replicas.
	var recs []metadata.Record
	for i := 0; i < n/perTopic; i++ {
		id := topicID(i)
		recs = append(recs, &metadata.TopicRecord{Name: fmt.Sprintf("t%d", i), TopicID: id})
		for p := 0; p < perTopic; p++ {
			replicas := []int32{testNode, 2, 3}
			if i*perTopic+p >= hostedCount {
				replicas = []int32{2, 3, 4}
			}
			k := p % 3
			replicas = append(replicas[k:], replicas[:k]...)
			recs = append(recs, partRecord(id, int32(p), replicas...))
		}
	}
	img := feed(t, metadata.EmptyImage(), []*Manager{m}, recs...)
	if got := len(m.HostedPartitions()); got != hostedCount {
		t.Fatalf("hosting %d partitions, want %d", got, hostedCount)
	}

	// Fetches parked on 1,000 hosted partitions (never the one changed).
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	const waiters = 1000
	for i := 0; i < waiters; i++ {
		ws := []FetchWatch{{Topic: "t0", Partition: int32(1 + i%(hostedCount-1))}}
		seen := m.FetchPositions(ws)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = m.WaitFetchable(ctx, ws, seen)
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	waitSize(t, m, PurgatoryFetch, waiters)

	// apply replays one batch and publishes it; it returns the time of
	// each part.
	apply := func(recs ...metadata.Record) (replay, publish time.Duration) {
		t0 := time.Now()
		d := metadata.NewDelta(img)
		if err := d.ReplayBatch(metadata.Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Epoch: 1, Records: recs}); err != nil {
			t.Fatal(err)
		}
		next := d.Apply()
		t1 := time.Now()
		m.Publish(d, next)
		img = next
		return t1.Sub(t0), time.Since(t1)
	}
	const rounds = 20
	measure := func(what string, change func(round int) []metadata.Record) {
		var replay, publish time.Duration
		for r := 0; r < rounds; r++ {
			a, b := apply(change(r)...)
			replay += a
			publish += b
		}
		t.Logf("%7d partitions, %d hosted: %-40s replay+apply %9v  publish %9v", n, hostedCount, what,
			(replay / rounds).Round(time.Microsecond/10), (publish / rounds).Round(time.Microsecond/10))
	}
	value := func(s string) *string { return &s }
	measure("leader change, hosted partition", func(r int) []metadata.Record {
		c := metadata.NewPartitionChangeRecord(topicID(0), 0)
		c.Leader = []int32{2, testNode}[r%2]
		return []metadata.Record{c}
	})
	measure("ISR change, partition hosted elsewhere", func(r int) []metadata.Record {
		c := metadata.NewPartitionChangeRecord(topicID(n/perTopic-1), perTopic-1)
		c.ISR = [][]int32{{4, 2}, {4, 2, 3}}[r%2]
		return []metadata.Record{c}
	})
	measure("broker config no topic reads", func(r int) []metadata.Record {
		return []metadata.Record{&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, Name: "num.io.threads", Value: value(fmt.Sprint(4 + r))}}
	})
	measure("broker default topics inherit", func(r int) []metadata.Record {
		return []metadata.Record{&metadata.ConfigRecord{ResourceType: metadata.ConfigResourceBroker, Name: "log.retention.ms", Value: value(fmt.Sprint(100000 + r))}}
	})
	// None of these changes touched what the fetches wait for.
	if got := m.PurgatorySizes()[PurgatoryFetch]; got != waiters {
		t.Fatalf("parked fetches completed: %d left", got)
	}
	// Broker 3 shuts down: it leaves every ISR, and the partitions it led
	// elect the next replica in the ISR.
	var shutdown []metadata.Record
	for _, top := range img.Topics.All() {
		for p, part := range top.Partitions() {
			c := metadata.NewPartitionChangeRecord(top.ID, p)
			var isr []int32
			for _, r := range part.ISR {
				if r != 3 {
					isr = append(isr, r)
				}
			}
			c.ISR = isr
			if part.Leader == 3 {
				c.Leader = isr[0]
			}
			shutdown = append(shutdown, c)
		}
	}
	replay, publish := apply(shutdown...)
	t.Logf("%7d partitions, %d hosted: %-40s replay+apply %9v  publish %9v", n, hostedCount, "controlled shutdown of another broker",
		replay.Round(time.Microsecond/10), publish.Round(time.Microsecond/10))
}
