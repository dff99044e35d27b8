//go:build e2e

package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// saramaCodecs maps compression.type names to sarama's codecs.
var saramaCodecs = map[string]sarama.CompressionCodec{
	"none":   sarama.CompressionNone,
	"gzip":   sarama.CompressionGZIP,
	"snappy": sarama.CompressionSnappy,
	"lz4":    sarama.CompressionLZ4,
	"zstd":   sarama.CompressionZSTD,
}

// TestSarama drives one broker with IBM/sarama, speaking record batches v2
// (Version 2.8): ClusterAdmin creates and describes the topic, a
// SyncProducer writes with every codec at acks=all and acks=1, the client
// lists offsets (newest, oldest and by timestamp) and a partition consumer
// reads everything back from OffsetOldest.
func TestSarama(t *testing.T) {
	t.Parallel()
	b := startBroker(t)
	for _, codec := range codecs {
		for _, acks := range []sarama.RequiredAcks{sarama.WaitForAll, sarama.WaitForLocal} {
			name := fmt.Sprintf("%s/acks=%d", codec, acks)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				saramaRoundTrip(t, b, codec, acks)
			})
		}
	}
}

func saramaConfig(codec string, acks sarama.RequiredAcks) *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "gregor-e2e"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = acks
	cfg.Producer.Compression = saramaCodecs[codec]
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Frequency = 5 * time.Millisecond
	cfg.Producer.Retry.Max = 0 // a retry could duplicate; this test wants exactly once
	cfg.Consumer.Return.Errors = true
	cfg.Metadata.AllowAutoTopicCreation = false
	return cfg
}

func saramaRoundTrip(t *testing.T, b *broker, codec string, acks sarama.RequiredAcks) {
	const partitions, perPartition = 3, 200
	topic := fmt.Sprintf("sarama-%s-acks%d", codec, acks)
	cfg := saramaConfig(codec, acks)

	// Admin: create the topic with a topic-level config and read it back.
	admin, err := sarama.NewClusterAdmin([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("cluster admin: %v", err)
	}
	defer admin.Close()
	err = admin.CreateTopic(topic, &sarama.TopicDetail{
		NumPartitions:     partitions,
		ReplicationFactor: 1,
		ConfigEntries:     map[string]*string{"retention.ms": strp("86400001")},
	}, false)
	if err != nil {
		t.Fatalf("CreateTopic: %v", err)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	if !isSaramaErr(err, sarama.ErrTopicAlreadyExists) {
		t.Errorf("second CreateTopic: got %v, want TOPIC_ALREADY_EXISTS", err)
	}
	entries, err := admin.DescribeConfig(sarama.ConfigResource{Type: sarama.TopicResource, Name: topic})
	if err != nil {
		t.Fatalf("DescribeConfig: %v", err)
	}
	byName := map[string]sarama.ConfigEntry{}
	for _, e := range entries {
		byName[e.Name] = e
	}
	if e := byName["retention.ms"]; e.Value != "86400001" || e.Source != sarama.SourceTopic {
		t.Errorf("retention.ms: got %q source %v, want 86400001 from the topic", e.Value, e.Source)
	}
	if e := byName["cleanup.policy"]; e.Value != "delete" || e.Source != sarama.SourceDefault {
		t.Errorf("cleanup.policy: got %q source %v, want the default delete", e.Value, e.Source)
	}
	topics, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(topics) != 1 || len(topics[0].Partitions) != partitions {
		t.Fatalf("DescribeTopics: %v %+v", err, topics)
	}

	// Produce: batches through SendMessages, with explicit timestamps one
	// millisecond apart so that ListOffsets by time has exact answers.
	client, err := sarama.NewClient([]string{b.addr()}, cfg)
	if err != nil {
		t.Fatalf("client: %v", err)
	}
	defer client.Close()
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatalf("sync producer: %v", err)
	}
	defer producer.Close()
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var sent []*sarama.ProducerMessage
	for chunk := 0; chunk < 6; chunk++ {
		var msgs []*sarama.ProducerMessage
		for i := 0; i < partitions*perPartition/6; i++ {
			n := len(sent) + len(msgs)
			msgs = append(msgs, &sarama.ProducerMessage{
				Topic:     topic,
				Partition: int32(n % partitions),
				Key:       sarama.StringEncoder(fmt.Sprintf("k%d", n)),
				Value:     sarama.StringEncoder(fmt.Sprintf("%s-%05d", topic, n)),
				Timestamp: base.Add(time.Duration(n) * time.Millisecond),
			})
		}
		if err := producer.SendMessages(msgs); err != nil {
			t.Fatalf("SendMessages: %v", err)
		}
		sent = append(sent, msgs...)
	}
	// Every message got the next offset of its partition, in send order.
	next := make([]int64, partitions)
	for _, m := range sent {
		if m.Offset != next[m.Partition] {
			t.Fatalf("message %v went to %d/%d, want offset %d", m.Value, m.Partition, m.Offset, next[m.Partition])
		}
		next[m.Partition]++
	}
	// One more through SendMessage.
	last := &sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder("single"),
		Timestamp: base.Add(time.Duration(len(sent)) * time.Millisecond)}
	p, off, err := producer.SendMessage(last)
	if err != nil || p != 0 || off != perPartition {
		t.Fatalf("SendMessage: %d/%d %v, want 0/%d", p, off, err, perPartition)
	}
	sent = append(sent, last)

	checkStoredCodec(t, b, topic, 1, codec)

	// ListOffsets.
	for p := int32(0); p < partitions; p++ {
		want := int64(perPartition)
		if p == 0 {
			want++
		}
		if got, err := client.GetOffset(topic, p, sarama.OffsetNewest); err != nil || got != want {
			t.Errorf("GetOffset(%d, newest) = %d, %v; want %d", p, got, err, want)
		}
		if got, err := client.GetOffset(topic, p, sarama.OffsetOldest); err != nil || got != 0 {
			t.Errorf("GetOffset(%d, oldest) = %d, %v; want 0", p, got, err)
		}
	}
	// By timestamp: message n has timestamp base+n ms and sits on
	// partition n%3 at offset n/3, so the first offset at or after
	// base+n on partition p is ceil((n-p)/3).
	for _, n := range []int{0, 1, 299, 300, 598} {
		ts := base.Add(time.Duration(n) * time.Millisecond).UnixMilli()
		for p := 0; p < partitions; p++ {
			want := int64(0)
			if n > p {
				want = int64((n - p + partitions - 1) / partitions)
			}
			if got, err := client.GetOffset(topic, int32(p), ts); err != nil || got != want {
				t.Errorf("GetOffset(%d, ts base+%d) = %d, %v; want %d", p, n, got, err, want)
			}
		}
	}
	if got, err := client.GetOffset(topic, 1, base.Add(time.Hour).UnixMilli()); err != nil || got != -1 {
		t.Errorf("GetOffset(1, after the last timestamp) = %d, %v; want -1", got, err)
	}

	// Consume every partition from the oldest offset.
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatalf("consumer: %v", err)
	}
	defer consumer.Close()
	byPartition := make([][]*sarama.ProducerMessage, partitions)
	for _, m := range sent {
		byPartition[m.Partition] = append(byPartition[m.Partition], m)
	}
	for p := int32(0); p < partitions; p++ {
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatalf("ConsumePartition(%d): %v", p, err)
		}
		want := byPartition[p]
		timeout := time.After(30 * time.Second)
		for i := 0; i < len(want); i++ {
			select {
			case m := <-pc.Messages():
				w := want[i]
				wv, _ := w.Value.Encode()
				var wk []byte
				if w.Key != nil {
					wk, _ = w.Key.Encode()
				}
				if m.Offset != int64(i) || string(m.Value) != string(wv) || string(m.Key) != string(wk) ||
					!m.Timestamp.Equal(w.Timestamp) {
					t.Fatalf("partition %d message %d: got offset %d key %q value %q ts %v; want key %q value %q ts %v",
						p, i, m.Offset, m.Key, m.Value, m.Timestamp, wk, wv, w.Timestamp)
				}
			case err := <-pc.Errors():
				t.Fatalf("consume partition %d: %v", p, err)
			case <-timeout:
				t.Fatalf("partition %d: only %d of %d messages within 30s", p, i, len(want))
			}
		}
		// Nothing beyond what was produced.
		select {
		case m := <-pc.Messages():
			t.Errorf("partition %d: unexpected extra message at offset %d", p, m.Offset)
		case <-time.After(200 * time.Millisecond):
		}
		if hw := pc.HighWaterMarkOffset(); hw != int64(len(want)) {
			t.Errorf("partition %d: high watermark %d, want %d", p, hw, len(want))
		}
		pc.Close()
	}
}

func isSaramaErr(err error, want sarama.KError) bool {
	if err == nil {
		return false
	}
	if te, ok := err.(*sarama.TopicError); ok {
		return te.Err == want
	}
	return err == want
}
