//go:build e2e

package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPipelinedProduceOrder sends many Produce requests for one partition
// on one connection without waiting for answers, as librdkafka, sarama,
// kafka-python and the Java producer do (max.in.flight > 1). Kafka
// processes the requests of a connection one at a time, in order (the
// protocol guide: "requests will be processed in the order they are sent"),
// so request i must get offset i.
func TestPipelinedProduceOrder(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	createTopic(t, newKgo(t, b), "pipelined", 1, nil)
	rc := dialRaw(t, b)
	const n = 200
	var frames []byte
	first := rc.corr + 1
	for i := range n {
		frames = append(frames, rc.frame(produceRequest("pipelined", 0, -1, buildBatch(t, batchOpts{values: []string{fmt.Sprint(i)}})))...)
	}
	if err := rc.write(frames); err != nil {
		t.Fatal(err)
	}
	var wrong []string
	for i := range n {
		frame, err := rc.readFrame(20 * time.Second)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 9
		if err := decodeResponse(frame, first+int32(i), resp); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != 0 {
			t.Fatalf("request %d: error %d", i, p.ErrorCode)
		}
		if p.BaseOffset != int64(i) {
			wrong = append(wrong, fmt.Sprintf("request %d -> offset %d", i, p.BaseOffset))
		}
	}
	if len(wrong) > 0 {
		t.Errorf("%d of %d pipelined requests appended out of order, e.g. %v", len(wrong), n, wrong[:min(len(wrong), 5)])
	}
}
