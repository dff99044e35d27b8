package replica

import (
	"math"
	"testing"
	"time"

	"gregor/internal/log"
	"gregor/internal/metadata"
)

// Java's String.hashCode of these strings, as the JVM computes them.
func TestJavaStringHash(t *testing.T) {
	for _, c := range []struct {
		s    string
		want int32
	}{
		{"", 0},
		{"foo", 101574},
		{"hello", 99162322},
		{"é", 233},
		{"😀", 1772899}, // two UTF-16 code units: 0xD83D*31 + 0xDE00
		{"polygenelubricants", math.MinInt32},
	} {
		if got := javaStringHash(c.s); got != c.want {
			t.Errorf("javaStringHash(%q) = %d, want %d", c.s, got, c.want)
		}
	}
}

// fetcherID is Kafka's getFetcherId: abs(31*hash(topic)+partition) % n,
// with abs(MinInt32) = 0.
func TestFetcherIDAsKafka(t *testing.T) {
	for _, c := range []struct {
		topic     string
		partition int32
		n         int
		want      int
	}{
		{"foo", 0, 1, 0},
		{"foo", 0, 3, 0},                // 31*101574 = 3148794 = 3*1049598
		{"foo", 1, 3, 1},                // 3148795
		{"hello", 0, 4, 2},              // 31*99162322 = 3074031982 wraps to -1220935314; abs mod 4 = 2
		{"polygenelubricants", 0, 3, 0}, // 31*MinInt32 wraps to MinInt32: abs gives 0
		{"polygenelubricants", 1, 3, 1}, // MinInt32+1: abs is MaxInt32 = 2147483647, mod 3 = 1
	} {
		if got := fetcherID(log.TopicPartition{Topic: c.topic, Partition: c.partition}, c.n); got != c.want {
			t.Errorf("fetcherID(%s-%d, %d) = %d, want %d", c.topic, c.partition, c.n, got, c.want)
		}
	}
}

// The partitions a broker follows from one leader are spread over
// num.replica.fetchers fetchers by fetcherID, and a new count moves each
// to the fetcher its hash names then, stopping fetchers left empty.
func TestNumReplicaFetchers(t *testing.T) {
	m := newTestManager(t)
	m.StartReplication(ReplicationConfig{Fetcher: FetcherConfig{Listener: "PLAINTEXT", NumFetchers: 3,
		MaxWait: 10 * time.Millisecond, Backoff: 10 * time.Millisecond}})
	defer m.Close()
	// The leader's endpoint refuses connections: the fetchers retry until
	// closed, which is all this test needs of them.
	leader := &metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: 2, BrokerEpoch: 1,
		EndPoints: []metadata.BrokerEndpoint{{Name: "PLAINTEXT", Host: "127.0.0.1", Port: 1}}, Features: []metadata.BrokerFeature{}}
	const parts = 16
	feed(t, metadata.EmptyImage(), []*Manager{m}, append([]metadata.Record{leader}, createTopic("t", topicID(1), parts, 2, testNode)...)...)

	check := func(n int) {
		t.Helper()
		m.fetchMu.Lock()
		defer m.fetchMu.Unlock()
		if len(m.following) != parts {
			t.Fatalf("following %d partitions, want %d", len(m.following), parts)
		}
		ids := map[int]bool{}
		for tp, key := range m.following {
			if want := (fetcherKey{leader: 2, id: fetcherID(tp, n)}); key != want {
				t.Errorf("%s fetched by %+v, want %+v", tp, key, want)
			}
			f := m.fetchers[key]
			if f == nil {
				t.Fatalf("%s: no fetcher %+v", tp, key)
			}
			f.mu.Lock()
			_, ok := f.parts[tp]
			f.mu.Unlock()
			if !ok {
				t.Errorf("fetcher %+v lacks %s", key, tp)
			}
			ids[key.id] = true
		}
		if len(m.fetchers) != len(ids) {
			t.Errorf("%d fetchers for %d fetcher ids in use", len(m.fetchers), len(ids))
		}
		if n > 1 && len(ids) < 2 {
			t.Errorf("%d partitions all on one of %d fetchers", parts, n)
		}
	}
	check(3)
	m.SetNumReplicaFetchers(1)
	check(1)
	m.SetNumReplicaFetchers(4)
	check(4)
}
