package record

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestMurmur2KafkaVectors are the vectors of Kafka's UtilsTest.testMurmur2.
func TestMurmur2KafkaVectors(t *testing.T) {
	for in, want := range map[string]int32{
		"21":                         -973932308,
		"foobar":                     -790332482,
		"a-little-bit-long-string":   -985981536,
		"a-little-bit-longer-string": -1486304829,
		"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := Murmur2([]byte(in)); got != want {
			t.Errorf("Murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestPartitionForKeyMatchesKgo cross-checks the default partitioner with
// franz-go's Kafka-compatible sticky key partitioner.
func TestPartitionForKeyMatchesKgo(t *testing.T) {
	part := kgo.StickyKeyPartitioner(nil).ForTopic("t")
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 2000; i++ {
		key := make([]byte, rnd.IntN(40))
		for j := range key {
			key[j] = byte(rnd.IntN(256))
		}
		if i%2 == 0 {
			key = []byte(fmt.Sprintf("user-%d", i))
		}
		n := 1 + rnd.IntN(100)
		if got, want := PartitionForKey(key, int32(n)), part.Partition(&kgo.Record{Key: key}, n); int(got) != want {
			t.Fatalf("key %x, %d partitions: got %d, kgo %d", key, n, got, want)
		}
	}
}
