package server

// The data half of the differential test: Produce, Fetch and ListOffsets on
// the same batches, sent byte for byte identical to Gregor and to kfake.

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// plannedBatch is one batch produced to partition 0 of topicMain, its record
// timestamps given as offsets from the run's base time. The third batch's
// largest timestamp sits in its middle, so "max timestamp" and "first
// timestamp at or after" must look inside a compressed batch.
type plannedBatch struct {
	codec  kgo.CompressionCodec
	deltas []int64
}

func plannedBatches() []plannedBatch {
	return []plannedBatch{
		{kgo.NoCompression(), []int64{0, 1000, 2000}},              // offsets 0-2
		{kgo.GzipCompression(), []int64{3000, 4000}},               // 3-4
		{kgo.SnappyCompression(), []int64{5000, 9000, 6000, 7000}}, // 5-8, max timestamp at 6
		{kgo.Lz4Compression(), []int64{8000}},                      // 9
		{kgo.ZstdCompression(), []int64{8500, 8600, 8700}},         // 10-12
	}
}

const mainRecords = 13 // records in partition 0 of topicMain after produce

// batches encodes the planned batches and returns them with the records a
// consumer must read back, in offset order.
func (d *differential) batches(t *testing.T) ([][]byte, []fetchedRecord) {
	var out [][]byte
	var want []fetchedRecord
	offset := int64(0)
	for _, pb := range plannedBatches() {
		var recs []testRecord
		for _, delta := range pb.deltas {
			r := testRecord{Value: fmt.Sprintf("value-%d", offset), Timestamp: d.base + delta}
			if offset%2 == 0 {
				r.Key = fmt.Sprintf("key-%d", offset%3)
			}
			recs = append(recs, r)
			want = append(want, fetchedRecord{offset, r.Timestamp, r.Key, r.Value})
			offset++
		}
		out = append(out, buildBatch(t, pb.codec, recs))
	}
	return out, want
}

// producePart is one partition's batch in a Produce request.
type producePart struct {
	topic     string
	partition int32
	batch     []byte
}

// produceView is what Kafka fixes in a Produce answer for one partition.
type produceView struct {
	Topic          string
	Partition      int32
	Err            code
	BaseOffset     int64
	LogAppendTime  int64
	LogStartOffset int64
}

func (d *differential) produceRequest(t *testing.T, acks int16, parts ...producePart) (g, f []produceView) {
	t.Helper()
	gr, fr := produceBoth(t, d.p, func(side) *kmsg.ProduceRequest {
		r := kmsg.NewPtrProduceRequest()
		r.Acks, r.TimeoutMillis = acks, 10000
		for _, pp := range parts {
			i := slices.IndexFunc(r.Topics, func(rt kmsg.ProduceRequestTopic) bool { return rt.Topic == pp.topic })
			if i < 0 {
				rt := kmsg.NewProduceRequestTopic()
				rt.Topic = pp.topic
				r.Topics = append(r.Topics, rt)
				i = len(r.Topics) - 1
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition, rp.Records = pp.partition, pp.batch
			r.Topics[i].Partitions = append(r.Topics[i].Partitions, rp)
		}
		return r
	})
	return produceViews(gr), produceViews(fr)
}

func produceViews(r *kmsg.ProduceResponse) []produceView {
	var out []produceView
	if r == nil { // acks 0: no answer
		return nil
	}
	for _, rt := range r.Topics {
		for _, rp := range rt.Partitions {
			out = append(out, produceView{rt.Topic, rp.Partition, code(rp.ErrorCode), rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset})
		}
	}
	slices.SortFunc(out, func(a, b produceView) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// errorsOnly keeps the identity and error of each partition. Kafka answers
// a failed partition with base offset, append time and log start all -1
// (ProduceResponse.PartitionResponse(error)); kfake leaves base offset 0,
// so the offsets of failures are held to Kafka separately (produceFailed).
func errorsOnly(vs []produceView) []produceView {
	out := slices.Clone(vs)
	for i := range out {
		if out[i].Err != 0 {
			out[i].BaseOffset, out[i].LogAppendTime, out[i].LogStartOffset = 0, 0, 0
		}
	}
	return out
}

// produceFailed checks the failed partitions of Gregor's answer carry
// Kafka's -1 offsets.
func produceFailed(t *testing.T, g []produceView) {
	t.Helper()
	for _, v := range g {
		if v.Err != 0 && (v.BaseOffset != -1 || v.LogAppendTime != -1 || v.LogStartOffset != -1) {
			t.Errorf("Produce %s-%d failed with %v but answered offsets %+v; Kafka answers -1 for all three", v.Topic, v.Partition, v.Err, v)
		}
	}
}

func (d *differential) produce(t *testing.T) {
	v := d.p.version(0)
	batches, _ := d.batches(t)
	logStart := int64(0)
	if v < 5 { // log start offset is answered from v5
		logStart = -1
	}
	t.Run("acks all and leader", func(t *testing.T) {
		for i, b := range batches[:4] {
			acks := int16(-1)
			if i == 3 {
				acks = 1
			}
			g, f := d.produceRequest(t, acks, producePart{topicMain, 0, b})
			same(t, fmt.Sprintf("Produce batch %d acks %d", i, acks), g, f)
			base := int64(0)
			for _, pb := range plannedBatches()[:i] {
				base += int64(len(pb.deltas))
			}
			kafkaSays(t, fmt.Sprintf("Produce batch %d", i), g, []produceView{{topicMain, 0, 0, base, -1, logStart}})
		}
	})
	t.Run("acks none", func(t *testing.T) {
		g, f := d.produceRequest(t, 0, producePart{topicMain, 0, batches[4]})
		same(t, "Produce acks 0 answer", g, f)
		// Nothing acknowledges an acks=0 append: poll the end offset.
		deadline := time.Now().Add(5 * time.Second)
		for {
			g, f := d.listOffsets1(t, topicMain, 0, -1)
			if g.Offset == mainRecords && f.Offset == mainRecords {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("acks=0 batch not appended: end offsets gregor %d, kfake %d", g.Offset, f.Offset)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("several partitions and failures", func(t *testing.T) {
		g, f := d.produceRequest(t, -1,
			producePart{topicMain, 1, batches[0]},
			producePart{topicMain, 2, batches[1]},
			producePart{topicMain, 99, batches[0]},
			producePart{"missing", 0, batches[0]},
		)
		same(t, "Produce several partitions", errorsOnly(g), errorsOnly(f))
		unknown := code(kerr.UnknownTopicOrPartition.Code)
		kafkaSays(t, "Produce several partitions", errorsOnly(g), []produceView{
			{topicMain, 1, 0, 0, -1, logStart}, {topicMain, 2, 0, 0, -1, logStart},
			{topicMain, 99, unknown, 0, 0, 0}, {"missing", 0, unknown, 0, 0, 0},
		})
		produceFailed(t, g)
	})
	// The refused batches go to partition 2, which no later step reads,
	// so a wrongly accepted batch cannot disturb the rest of the run.
	t.Run("invalid required acks", func(t *testing.T) {
		// Kafka: ReplicaManager.isValidRequiredAcks allows only -1, 0, 1.
		g, f := d.produceRequest(t, 2, producePart{topicMain, 2, batches[0]})
		agree(t, "Produce acks 2", errorsOnly(g), errorsOnly(f), []produceView{{topicMain, 2, code(kerr.InvalidRequiredAcks.Code), 0, 0, 0}})
		produceFailed(t, g)
	})
	// Kafka answers a batch its log refuses (CorruptRecordException,
	// RecordTooLargeException) with LogAppendInfo.UNKNOWN_LOG_APPEND_INFO:
	// base offset, append time and log start offset all -1.
	t.Run("corrupt batch", func(t *testing.T) {
		bad := bytes.Clone(batches[0])
		bad[len(bad)-1] ^= 0xff // inside the CRC-covered records
		g, f := d.produceRequest(t, -1, producePart{topicMain, 2, bad})
		agree(t, "Produce bad crc", errorsOnly(g), errorsOnly(f), []produceView{{topicMain, 2, code(kerr.CorruptMessage.Code), 0, 0, 0}})
		t.Run("offsets of the failure", func(t *testing.T) {
			produceFailed(t, g)
		})
	})
	t.Run("record too large", func(t *testing.T) {
		big := make([]byte, 2<<20) // above both servers' default max.message.bytes (1 MiB)
		rand.Read(big)
		b := buildBatch(t, kgo.NoCompression(), []testRecord{{Value: string(big), Timestamp: d.base}})
		g, f := d.produceRequest(t, -1, producePart{topicMain, 2, b})
		agree(t, "Produce too large", errorsOnly(g), errorsOnly(f), []produceView{{topicMain, 2, code(kerr.MessageTooLarge.Code), 0, 0, 0}})
		t.Run("offsets of the failure", func(t *testing.T) {
			produceFailed(t, g)
		})
	})
	t.Run("refused batches were not appended", func(t *testing.T) {
		g, f := d.listOffsets1(t, topicMain, 2, -1)
		agree(t, "end of partition 2", g.Offset, f.Offset, int64(2))
	})
}

// fetchPartitionView is what Kafka fixes in a Fetch answer for a partition.
type fetchPartitionView struct {
	Topic            string
	Partition        int32
	Err              code
	HighWatermark    int64
	LastStableOffset int64
	LogStartOffset   int64
	Batches          []fetchedBatch
}

// fetchPart is one partition asked for in a Fetch request.
type fetchPart struct {
	topic     string
	partition int32
	offset    int64
	maxBytes  int32
}

func (d *differential) fetchRequest(t *testing.T, maxBytes int32, parts ...fetchPart) (g, f []fetchPartitionView) {
	t.Helper()
	v := d.p.version(1)
	// names maps the topic ids sent (v13+) back to the names asked for.
	names := [2]map[[16]byte]string{{}, {}}
	gr, fr := both[*kmsg.FetchResponse](t, d.p, func(s side) kmsg.Request {
		r := kmsg.NewPtrFetchRequest()
		r.MaxWaitMillis, r.MinBytes, r.MaxBytes = 100, 1, maxBytes
		for _, fp := range parts {
			i := slices.IndexFunc(r.Topics, func(rt kmsg.FetchRequestTopic) bool { return rt.Topic == fp.topic })
			if i < 0 {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = fp.topic
				if v >= 13 {
					rt.TopicID = d.topicID(s, fp.topic)
					names[s][rt.TopicID] = fp.topic
				}
				r.Topics = append(r.Topics, rt)
				i = len(r.Topics) - 1
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = fp.partition, fp.offset, fp.maxBytes
			r.Topics[i].Partitions = append(r.Topics[i].Partitions, rp)
		}
		return r
	})
	for s, r := range []*kmsg.FetchResponse{gr, fr} {
		if r.ErrorCode != 0 || r.SessionID != 0 {
			t.Errorf("%v Fetch: top-level error %v, session %d (a sessionless fetch gets neither)", side(s), code(r.ErrorCode), r.SessionID)
		}
	}
	return d.fetchViews(t, v, names[onGregor], gr), d.fetchViews(t, v, names[onKfake], fr)
}

// topicID is a side's id for a topic it knows, or a fresh random id (a
// topic it does not know).
func (d *differential) topicID(s side, topic string) [16]byte {
	if id, ok := d.p.ids[s][topic]; ok {
		return id
	}
	var id [16]byte
	rand.Read(id[:])
	return id
}

func (d *differential) fetchViews(t *testing.T, v int16, names map[[16]byte]string, r *kmsg.FetchResponse) []fetchPartitionView {
	t.Helper()
	var out []fetchPartitionView
	for _, rt := range r.Topics {
		name := rt.Topic
		if v >= 13 {
			name = names[rt.TopicID]
		}
		for _, rp := range rt.Partitions {
			out = append(out, fetchPartitionView{
				Topic: name, Partition: rp.Partition, Err: code(rp.ErrorCode),
				HighWatermark: rp.HighWatermark, LastStableOffset: rp.LastStableOffset, LogStartOffset: rp.LogStartOffset,
				Batches: decodeBatches(t, rp.RecordBatches),
			})
		}
	}
	slices.SortFunc(out, func(a, b fetchPartitionView) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return out
}

// offsetsOnly drops the offsets of failed partitions: Kafka answers them
// with high watermark, last stable offset and log start all -1
// (ReplicaManager's LogReadResult for an exception), kfake with the
// partition's real values, so Gregor is held to Kafka by fetchFailed.
func offsetsOnly(vs []fetchPartitionView) []fetchPartitionView {
	out := slices.Clone(vs)
	for i := range out {
		if out[i].Err != 0 {
			out[i].HighWatermark, out[i].LastStableOffset, out[i].LogStartOffset = 0, 0, 0
		}
	}
	return out
}

func fetchFailed(t *testing.T, g []fetchPartitionView) {
	t.Helper()
	for _, v := range g {
		if v.Err != 0 && (v.HighWatermark != -1 || v.LastStableOffset != -1 || v.LogStartOffset != -1) {
			t.Errorf("Fetch %s-%d failed with %v but answered hw %d, lso %d, log start %d; Kafka answers -1 for all three",
				v.Topic, v.Partition, v.Err, v.HighWatermark, v.LastStableOffset, v.LogStartOffset)
		}
	}
}

func (d *differential) fetch(t *testing.T) {
	v := d.p.version(1)
	d.metadataRequest(t, false, topicMain) // learn both sides' topic ids
	_, want := d.batches(t)
	logStart, lso := int64(0), int64(mainRecords)
	if v < 5 { // log start offset is answered from v5
		logStart = -1
	}
	// expect is Kafka's answer for partition 0 of topicMain holding every
	// batch whose first offset is at least from.
	expect := func(from int64, batches int) []fetchPartitionView {
		var bs []fetchedBatch
		base := int64(0)
		for _, pb := range plannedBatches() {
			n := int64(len(pb.deltas))
			if base+n > from {
				bs = append(bs, fetchedBatch{BaseOffset: base, LastOffsetDelta: int32(n - 1), Records: want[base : base+n]})
			}
			base += n
		}
		return []fetchPartitionView{{topicMain, 0, 0, mainRecords, lso, logStart, bs[:min(batches, len(bs))]}}
	}
	// recordsOf keeps what expect knows: offsets and records.
	recordsOf := func(vs []fetchPartitionView) []fetchPartitionView {
		out := slices.Clone(vs)
		for i := range out {
			out[i].Batches = slices.Clone(out[i].Batches)
			for j, b := range out[i].Batches {
				out[i].Batches[j] = fetchedBatch{BaseOffset: b.BaseOffset, LastOffsetDelta: b.LastOffsetDelta, Records: b.Records}
			}
		}
		return out
	}
	startOf := func(offset int64) int64 { // first offset of the batch holding offset
		base := int64(0)
		for _, pb := range plannedBatches() {
			if offset < base+int64(len(pb.deltas)) {
				return base
			}
			base += int64(len(pb.deltas))
		}
		return base
	}

	t.Run("from the start", func(t *testing.T) {
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, 0, 1 << 20})
		same(t, "Fetch from 0", g, f)
		kafkaSays(t, "Fetch from 0", recordsOf(g), expect(0, 5))
	})
	t.Run("from the middle of a batch", func(t *testing.T) {
		// The batch holding the offset is returned whole, from its base.
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, 6, 1 << 20})
		same(t, "Fetch from 6", g, f)
		kafkaSays(t, "Fetch from 6", recordsOf(g), expect(startOf(6), 5))
	})
	t.Run("at the end", func(t *testing.T) {
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, mainRecords, 1 << 20})
		same(t, "Fetch at the end", g, f)
		kafkaSays(t, "Fetch at the end", g, expect(mainRecords, 0))
	})
	for _, offset := range []int64{mainRecords + 5, -1} {
		t.Run(fmt.Sprintf("out of range %d", offset), func(t *testing.T) {
			g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, offset, 1 << 20})
			agree(t, "Fetch out of range", offsetsOnly(g), offsetsOnly(f), []fetchPartitionView{{Topic: topicMain, Err: code(kerr.OffsetOutOfRange.Code)}})
			t.Run("offsets of the failure", func(t *testing.T) {
				// kfake answers the real offsets: a known kfake divergence,
				// so only Kafka's answer (-1 for all three) is asserted.
				fetchFailed(t, g)
			})
		})
	}
	t.Run("partition max bytes 1", func(t *testing.T) {
		// KIP-74: the first batch is returned even when larger.
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, 0, 1})
		same(t, "Fetch partition max 1", g, f)
		kafkaSays(t, "Fetch partition max 1", recordsOf(g), expect(0, 1))
	})
	t.Run("partition max bytes mid batch", func(t *testing.T) {
		// Kafka may return the second batch cut short; only complete
		// batches are compared, as a consumer uses only those.
		batches, _ := d.batches(t)
		limit := int32(len(batches[0]) + len(batches[1])/2)
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 0, 0, limit})
		same(t, "Fetch partition max mid batch", g, f)
		kafkaSays(t, "Fetch partition max mid batch", recordsOf(g), expect(0, 1))
	})
	t.Run("response max bytes 1 over two partitions", func(t *testing.T) {
		// The first partition with data gets its first batch; the
		// response is then full, so the second gets no records, but it
		// is still answered with its offsets.
		g, f := d.fetchRequest(t, 1, fetchPart{topicMain, 0, 0, 1 << 20}, fetchPart{topicMain, 1, 0, 1 << 20})
		second := fetchPartitionView{topicMain, 1, 0, 3, 3, logStart, nil}
		asKafka(t, "Fetch response max 1", recordsOf(g), recordsOf(f), append(expect(0, 1), second),
			"kfake leaves out every partition after the one that filled the response; Kafka's ReplicaManager.readFromLocalLog "+
				"reads each requested partition (limitBytes 0 after the first) and a sessionless fetch answers all of them")
	})
	t.Run("unknown partition", func(t *testing.T) {
		g, f := d.fetchRequest(t, 1<<20, fetchPart{topicMain, 99, 0, 1 << 20})
		agree(t, "Fetch unknown partition", offsetsOnly(g), offsetsOnly(f), []fetchPartitionView{{Topic: topicMain, Partition: 99, Err: code(kerr.UnknownTopicOrPartition.Code)}})
		fetchFailed(t, g)
	})
	t.Run("unknown topic", func(t *testing.T) {
		want := kerr.UnknownTopicOrPartition // by name, before v13
		if v >= 13 {
			want = kerr.UnknownTopicID
		}
		g, f := d.fetchRequest(t, 1<<20, fetchPart{"missing", 0, 0, 1 << 20})
		agree(t, "Fetch unknown topic", offsetsOnly(g), offsetsOnly(f), []fetchPartitionView{{Topic: "missing", Err: code(want.Code)}})
		fetchFailed(t, g)
	})
}

// listOffsetsView is what Kafka fixes in a ListOffsets answer.
type listOffsetsView struct {
	Err         code
	Offset      int64
	Timestamp   int64
	LeaderEpoch int32
}

func (d *differential) listOffsets1(t *testing.T, topic string, partition int32, timestamp int64) (g, f listOffsetsView) {
	t.Helper()
	gr, fr := both[*kmsg.ListOffsetsResponse](t, d.p, func(side) kmsg.Request {
		r := kmsg.NewPtrListOffsetsRequest()
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = partition, timestamp
		rt.Partitions = append(rt.Partitions, rp)
		r.Topics = append(r.Topics, rt)
		return r
	})
	view := func(s side, r *kmsg.ListOffsetsResponse) listOffsetsView {
		if len(r.Topics) != 1 || len(r.Topics[0].Partitions) != 1 {
			t.Fatalf("%v ListOffsets of one partition answered %+v", s, r.Topics)
		}
		p := r.Topics[0].Partitions[0]
		return listOffsetsView{code(p.ErrorCode), p.Offset, p.Timestamp, p.LeaderEpoch}
	}
	return view(onGregor, gr), view(onKfake, fr)
}

type listOffsetsCase struct {
	name      string
	topic     string
	partition int32
	timestamp int64
	want      listOffsetsView // Kafka's answer
}

func (d *differential) listOffsets(t *testing.T) {
	v := d.p.version(2)
	epoch := int32(-1)
	if v >= 4 { // the leader epoch is answered from v4
		epoch = 0
	}
	unsupported := listOffsetsView{code(kerr.UnsupportedVersion.Code), -1, -1, -1}
	unknown := listOffsetsView{code(kerr.UnknownTopicOrPartition.Code), -1, -1, -1}
	cases := []listOffsetsCase{
		{"earliest", topicMain, 0, -2, listOffsetsView{0, 0, -1, epoch}},
		{"latest", topicMain, 0, -1, listOffsetsView{0, mainRecords, -1, epoch}},
		{"latest of another partition", topicMain, 1, -1, listOffsetsView{0, 3, -1, epoch}},
		{"first timestamp", topicMain, 0, d.base, listOffsetsView{0, 0, d.base, epoch}},
		{"between records", topicMain, 0, d.base + 2500, listOffsetsView{0, 3, d.base + 3000, epoch}},
		// Offset 6 (at +9000) is the first record, in offset order, at
		// or after +6500; offset 7 (+7000) comes later.
		{"inside a compressed batch", topicMain, 0, d.base + 6500, listOffsetsView{0, 6, d.base + 9000, epoch}},
		{"after the last timestamp", topicMain, 0, d.base + 100000, listOffsetsView{0, -1, -1, -1}},
		{"unknown partition", topicMain, 99, -1, unknown},
		{"unknown topic", "missing", 0, -1, unknown},
	}
	// Max timestamp (-3, KIP-734) from v7 and earliest local (-4,
	// KIP-405) from v8; below those versions the broker refuses the
	// partition with UNSUPPORTED_VERSION.
	maxTS := listOffsetsView{0, 6, d.base + 9000, epoch}
	if v < 7 {
		maxTS = unsupported
	}
	earliestLocal := listOffsetsView{0, 0, -1, epoch}
	if v < 8 {
		earliestLocal = unsupported
	}
	cases = append(cases,
		listOffsetsCase{"max timestamp", topicMain, 0, -3, maxTS},
		listOffsetsCase{"earliest local", topicMain, 0, -4, earliestLocal})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, f := d.listOffsets1(t, c.topic, c.partition, c.timestamp)
			agree(t, "ListOffsets "+c.name, g, f, c.want)
		})
	}
}
