package cli

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxLatencySamples bounds the latencies kept for percentiles, as Kafka's
// producer perf test keeps at most 500,000, taken evenly over the run.
const maxLatencySamples = 500_000

// mib is the "MB" of Kafka's perf tools.
const mib = 1024 * 1024

// latencyStats collects acknowledgement latencies: count, sum and max
// exactly, percentiles from every sampling-th record.
type latencyStats struct {
	sampling int64

	mu      sync.Mutex
	count   int64
	sum     time.Duration
	max     time.Duration
	samples []time.Duration
}

func newLatencyStats(expected int64) *latencyStats {
	return &latencyStats{
		sampling: max(1, expected/maxLatencySamples),
		samples:  make([]time.Duration, 0, min(expected, maxLatencySamples+1)),
	}
}

func (s *latencyStats) record(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count%s.sampling == 0 {
		s.samples = append(s.samples, d)
	}
	s.count++
	s.sum += d
	s.max = max(s.max, d)
}

// latencySummary is in milliseconds.
type latencySummary struct {
	Avg  float64 `json:"avg"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

// produceSummary is what `bench produce` reports; its JSON form is the
// --json line.
type produceSummary struct {
	Records       int64          `json:"records"`
	Bytes         int64          `json:"bytes"`
	ElapsedMs     float64        `json:"elapsed_ms"`
	RecordsPerSec float64        `json:"records_per_sec"`
	MBPerSec      float64        `json:"mb_per_sec"`
	LatencyMs     latencySummary `json:"latency_ms"`
	Errors        int64          `json:"errors"`
	// ThrottledResponses and ThrottleMs are the brokers' client-quota
	// throttling of the run.
	ThrottledResponses int64   `json:"throttled_responses"`
	ThrottleMs         float64 `json:"throttle_ms"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func (s *latencyStats) summary(elapsed time.Duration, recordSize int64) produceSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	sorted := slices.Clone(s.samples)
	slices.Sort(sorted)
	pct := func(p float64) float64 {
		if len(sorted) == 0 {
			return 0
		}
		return ms(sorted[min(int(p*float64(len(sorted))), len(sorted)-1)])
	}
	sum := produceSummary{
		Records:       s.count,
		Bytes:         s.count * recordSize,
		ElapsedMs:     ms(elapsed),
		RecordsPerSec: rate(s.count, elapsed),
		MBPerSec:      rate(s.count*recordSize, elapsed) / mib,
		LatencyMs: latencySummary{
			P50: pct(0.5), P95: pct(0.95), P99: pct(0.99), P999: pct(0.999), Max: ms(s.max),
		},
	}
	if s.count > 0 {
		sum.LatencyMs.Avg = ms(s.sum) / float64(s.count)
	}
	return sum
}

// benchProgress redraws one status line on a terminal: records done of the
// total, rate, MB/s and ETA. Off a terminal it prints nothing, so that
// captured output holds only the summary.
type benchProgress struct {
	out     io.Writer
	total   int64
	live    bool
	what    string
	records atomic.Int64
	bytes   atomic.Int64
	ll      *liveLine
}

func newBenchProgress(out io.Writer, total int64, live bool, what string) *benchProgress {
	return &benchProgress{out: out, total: total, live: live, what: what}
}

func (p *benchProgress) add(records, bytes int64) {
	p.records.Add(records)
	p.bytes.Add(bytes)
}

// start begins the redraws; finish ends them.
func (p *benchProgress) start() { p.ll = startLiveLine(p.out, p.live, p.line) }

func (p *benchProgress) finish() { p.ll.stop() }

func (p *benchProgress) line(elapsed time.Duration) string {
	recs, b := p.records.Load(), p.bytes.Load()
	r := rate(recs, elapsed)
	s := fmt.Sprintf("%d/%d %s", recs, p.total, p.what)
	if p.total > 0 {
		s += fmt.Sprintf(" (%.0f%%)", 100*float64(recs)/float64(p.total))
	}
	s += fmt.Sprintf(", %.0f records/s, %.2f MB/s", r, rate(b, elapsed)/mib)
	if r > 0 && recs < p.total {
		eta := time.Duration(float64(p.total-recs) / r * float64(time.Second))
		s += ", ETA " + eta.Round(time.Second).String()
	}
	return s
}

// brokerThrottles counts the responses the brokers throttled (client quotas:
// throttle_time_ms > 0) and the throttle time they asked for; a kgo hook.
type brokerThrottles struct {
	responses atomic.Int64
	total     atomic.Int64 // nanoseconds
}

// OnBrokerThrottle implements kgo.HookBrokerThrottle.
func (b *brokerThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, interval time.Duration, _ bool) {
	b.responses.Add(1)
	b.total.Add(int64(interval))
}

// summary is the throttled responses and their total throttle in ms.
func (b *brokerThrottles) summary() (int64, float64) {
	return b.responses.Load(), ms(time.Duration(b.total.Load()))
}

// printThrottles says how much the brokers throttled the run, when they did.
func printThrottles(w io.Writer, responses int64, totalMs float64) {
	if responses > 0 {
		fmt.Fprintf(w, "%d responses throttled by the brokers (client quota), %.0f ms of throttle in total\n", responses, totalMs)
	}
}
