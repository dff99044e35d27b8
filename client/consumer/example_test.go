package consumer_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"gregor/client/consumer"
)

// A poll loop with Java habits: a .properties file, an assignment, Poll,
// then a synchronous commit of what was processed. kfake stands in for a
// cluster, and franz-go writes the records to read.
func Example() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	defer cluster.Close()
	writer, _ := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	for _, v := range []string{"created", "paid", "shipped"} {
		_ = writer.ProduceSync(context.Background(), &kgo.Record{Topic: "orders", Key: []byte("order-1"), Value: []byte(v)})
	}
	writer.Close()

	props, _ := consumer.ParseProperties(strings.NewReader(`
bootstrap.servers=` + cluster.ListenAddrs()[0] + `
group.id=billing
auto.offset.reset=earliest
enable.auto.commit=false
max.poll.records=100
key.deserializer=org.apache.kafka.common.serialization.StringDeserializer
value.deserializer=org.apache.kafka.common.serialization.StringDeserializer
`))
	c, err := consumer.NewFromProperties[string, string](props, consumer.StringDeserializer{}, consumer.StringDeserializer{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close(context.Background())
	_ = c.Assign([]consumer.TopicPartition{{Topic: "orders", Partition: 0}})

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for seen := 0; seen < 3; {
		recs, err := c.Poll(ctx)
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, r := range recs {
			fmt.Println(r.Offset, r.Key, r.Value)
			seen++
		}
	}
	// nil commits the current positions of every assigned partition.
	fmt.Println(c.CommitSync(ctx, nil))
	committed, _ := c.Committed(ctx, []consumer.TopicPartition{{Topic: "orders", Partition: 0}})
	fmt.Println(committed[consumer.TopicPartition{Topic: "orders", Partition: 0}].Offset)
	// Output:
	// 0 order-1 created
	// 1 order-1 paid
	// 2 order-1 shipped
	// <nil>
	// 3
}
