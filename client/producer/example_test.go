package producer_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"gregor/client/producer"
)

// A Java client's properties file works unchanged; the serializers are Go
// values instead of class names. kfake stands in for a cluster here.
func Example() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "orders"))
	defer cluster.Close()

	props, _ := producer.ParseProperties(strings.NewReader(`
bootstrap.servers=` + cluster.ListenAddrs()[0] + `
acks=all
linger.ms=10
compression.type=zstd
key.serializer=org.apache.kafka.common.serialization.StringSerializer
value.serializer=org.apache.kafka.common.serialization.StringSerializer
`))
	p, err := producer.NewFromProperties[string, string](props, producer.StringSerializer{}, producer.StringSerializer{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer p.Close(30 * time.Second)

	ctx := context.Background()
	// Synchronous: wait for the acknowledgement.
	md, err := p.SendSync(ctx, producer.Record[string, string]{Topic: "orders", Key: "order-1", Value: "created"})
	fmt.Println(md.Topic, md.Partition, md.Offset, err)

	// Asynchronous: the callback gets the outcome.
	done := make(chan struct{})
	_ = p.Send(ctx, producer.Record[string, string]{Topic: "orders", Key: "order-1", Value: "paid"},
		func(md producer.RecordMetadata, err error) {
			fmt.Println(md.Partition, md.Offset, err) // same key, same partition, next offset
			close(done)
		})
	<-done

	// Fire-and-forget, then Flush to wait for everything sent so far.
	_ = p.Send(ctx, producer.Record[string, string]{Topic: "orders", Key: "order-1", Value: "shipped"}, nil)
	fmt.Println(p.Flush(ctx))
	// Output:
	// orders 1 0 <nil>
	// 1 1 <nil>
	// <nil>
}

// Typed options: DefaultConfig holds Kafka's defaults; set what differs.
func ExampleNew() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "events"))
	defer cluster.Close()

	cfg := producer.DefaultConfig(cluster.ListenAddrs()...)
	cfg.Linger = 20 * time.Millisecond
	cfg.BatchSize = 64 << 10
	cfg.Partitioner = producer.NewRoundRobinPartitioner()
	p, err := producer.New[[]byte, []byte](cfg, producer.ByteArraySerializer{}, producer.ByteArraySerializer{})
	if err != nil {
		fmt.Println(err)
		return
	}
	md, err := p.SendSync(context.Background(), producer.Record[[]byte, []byte]{Topic: "events", Value: []byte("hello")})
	fmt.Println(md.Offset, md.SerializedKeySize, md.SerializedValueSize, err)
	fmt.Println(p.Close(10 * time.Second))
	// Output:
	// 0 -1 5 <nil>
	// <nil>
}
