package replica

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"gregor/internal/metadata"
)

// TestBenchGainLeadership measures, with GREGOR_BENCH=1, the broker side of
// another broker's controlled shutdown: one metadata delta that makes this
// broker the leader of N partitions it follows (GREGOR_BENCH_GAIN, default
// 10000). Each new leadership writes its leader-epoch checkpoint before it
// is served, so this is bound by the file system's syncs, not the CPU: the
// logs are on TMPDIR's file system, which is what it measures. Figures are
// logged, not asserted.
func TestBenchGainLeadership(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") == "" {
		t.Skip("set GREGOR_BENCH=1 to measure")
	}
	n := 10_000
	if s := os.Getenv("GREGOR_BENCH_GAIN"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		n = v
	}
	m := newTestManager(t)
	defer m.Close()
	const perTopic = 1000
	var recs []metadata.Record
	for i := 0; i*perTopic < n; i++ {
		recs = append(recs, createTopic(fmt.Sprintf("t%d", i), topicID(i), min(perTopic, n-i*perTopic), 2, testNode)...)
	}
	t0 := time.Now()
	img := feed(t, metadata.EmptyImage(), []*Manager{m}, recs...)
	host := time.Since(t0)
	var gain []metadata.Record
	for _, top := range img.Topics.All() {
		for p := range top.Partitions() {
			c := metadata.NewPartitionChangeRecord(top.ID, p)
			c.Leader, c.ISR = testNode, []int32{testNode}
			gain = append(gain, c)
		}
	}
	t0 = time.Now()
	feed(t, img, []*Manager{m}, gain...)
	took := time.Since(t0)
	for _, top := range img.Topics.All() {
		for p := range top.Partitions() {
			if _, err := m.Leader(top.Name, p); err != nil {
				t.Fatalf("%s-%d: %v", top.Name, p, err)
			}
		}
	}
	t.Logf("%d partitions followed (hosted in %v) become led in one delta: %v, %v each",
		n, host.Round(time.Millisecond), took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Microsecond))
}
