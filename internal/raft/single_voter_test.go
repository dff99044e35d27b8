package raft

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/record"
)

func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func openVoter(t *testing.T, dir string) (*SingleVoter, *metadata.Loader) {
	t.Helper()
	v, err := NewSingleVoter(SingleVoterConfig{Dir: dir, NodeID: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	l := metadata.NewLoader("c1", quietLogger())
	v.Register(l)
	if err := v.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return v, l
}

func topicRecords(name string, id byte, partitions int) []metadata.Record {
	tid := [16]byte{15: id}
	recs := []metadata.Record{&metadata.TopicRecord{Name: name, TopicID: tid}}
	for p := range partitions {
		recs = append(recs, &metadata.PartitionRecord{RecordVersion: 1, PartitionID: int32(p), TopicID: tid,
			Replicas: []int32{1}, ISR: []int32{1}, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
			Leader: 1, Directories: [][16]byte{{}}})
	}
	return recs
}

func readQuorumStateFile(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, QuorumStateFileName))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("quorum-state %s: %v", b, err)
	}
	return m
}

func TestSingleVoterAppendRestartReplay(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, loader := openVoter(t, dir)
	if id, epoch := v.Leader(); id != 1 || epoch != 1 {
		t.Fatalf("leader = %d epoch %d, want 1/1", id, epoch)
	}
	if hw := v.HighWatermark(); hw != 1 {
		t.Fatalf("high watermark after the leader change batch = %d, want 1", hw)
	}
	st := readQuorumStateFile(t, dir)
	want := map[string]any{"clusterId": "", "leaderId": 1.0, "leaderEpoch": 1.0, "votedId": 1.0, "appliedOffset": 0.0,
		"currentVoters": []any{map[string]any{"voterId": 1.0}}, "data_version": 0.0}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("quorum-state = %v\nwant %v", st, want)
	}

	last, err := v.Append(context.Background(), append([]metadata.Record{&metadata.FeatureLevelRecord{Name: "metadata.version", FeatureLevel: 25}},
		topicRecords("orders", 1, 3)...))
	if err != nil {
		t.Fatal(err)
	}
	if last != 5 {
		t.Fatalf("last offset = %d, want 5 (offset 0 is the leader change)", last)
	}
	// The listener has the batch when Append returns.
	img := loader.Image()
	if img.Offset != 5 || img.Epoch != 1 || img.Topics.Topic("orders").NumPartitions() != 3 {
		t.Fatalf("image after append: offset %d epoch %d topics %v", img.Offset, img.Epoch, slices.Collect(img.Topics.Names()))
	}
	if _, err := v.Append(context.Background(), topicRecords("payments", 2, 1)); err != nil {
		t.Fatal(err)
	}
	before := loader.Image()
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Append(context.Background(), topicRecords("x", 3, 1)); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append after close: %v", err)
	}

	// Restart: replay gives the same image, and the epoch goes up.
	v2, loader2 := openVoter(t, dir)
	defer v2.Close()
	after := loader2.Image()
	if after.Offset != before.Offset || after.Epoch != before.Epoch ||
		!reflect.DeepEqual(maps.Collect(after.Topics.All()), maps.Collect(before.Topics.All())) || !reflect.DeepEqual(after.Features, before.Features) {
		t.Fatalf("replayed image differs:\n%+v\n%+v", after, before)
	}
	if id, epoch := v2.Leader(); id != 1 || epoch != 2 {
		t.Fatalf("after restart leader %d epoch %d, want 1/2", id, epoch)
	}
	if st := readQuorumStateFile(t, dir); st["leaderEpoch"] != 2.0 {
		t.Fatalf("quorum-state after restart = %v", st)
	}
	last, err = v2.Append(context.Background(), []metadata.Record{&metadata.NoOpRecord{}})
	if err != nil {
		t.Fatal(err)
	}
	if img := loader2.Image(); img.Epoch != 2 || img.Offset != last {
		t.Fatalf("image after append in epoch 2: offset %d epoch %d (last %d)", img.Offset, img.Epoch, last)
	}
	// A listener registered late is brought up to date first.
	late := metadata.NewLoader("c1", quietLogger())
	v2.Register(late)
	if late.Image().Offset != last || late.Image().Topics.Topic("payments") == nil {
		t.Fatalf("late listener image offset %d", late.Image().Offset)
	}
	checkLogLayout(t, v2)
}

// checkLogLayout reads the raw log: each epoch opens with a LeaderChangeMessage
// control batch, and data batches carry their epoch as partition leader epoch.
func checkLogLayout(t *testing.T, v *SingleVoter) {
	t.Helper()
	info, err := v.log.Read(0, 1<<20, v.log.LogEndOffset(), true)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for rest := info.Records; len(rest) > 0; {
		h, recs, err := record.ReadRecords(rest[:mustHeader(t, rest).Size()])
		if err != nil {
			t.Fatal(err)
		}
		rest = rest[h.Size():]
		if h.IsControl() {
			if len(recs) != 1 || binary.BigEndian.Uint16(recs[0].Key[2:]) != 2 {
				t.Fatalf("control batch at %d: %+v", h.BaseOffset, recs)
			}
			var msg kmsg.LeaderChangeMessage
			if err := msg.ReadFrom(recs[0].Value); err != nil || msg.LeaderID != 1 || len(msg.Voters) != 1 {
				t.Fatalf("leader change message: %+v %v", msg, err)
			}
			kinds = append(kinds, "leader-change@"+itoa(h.PartitionLeaderEpoch))
			continue
		}
		if h.ProducerID != -1 || recs[0].Key != nil {
			t.Fatalf("data batch at %d: producer %d key %v", h.BaseOffset, h.ProducerID, recs[0].Key)
		}
		kinds = append(kinds, "data@"+itoa(h.PartitionLeaderEpoch))
	}
	want := []string{"leader-change@1", "data@1", "data@1", "leader-change@2", "data@2"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("log layout %v, want %v", kinds, want)
	}
}

func mustHeader(t *testing.T, b []byte) record.BatchHeader {
	t.Helper()
	h, err := record.ParseHeader(b)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func itoa(i int32) string { return string(rune('0' + i)) }

func TestSingleVoterTornTail(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, loader := openVoter(t, dir)
	if _, err := v.Append(context.Background(), topicRecords("orders", 1, 2)); err != nil {
		t.Fatal(err)
	}
	kept := loader.Image()
	if _, err := v.Append(context.Background(), topicRecords("payments", 2, 2)); err != nil {
		t.Fatal(err)
	}
	if err := v.Close(); err != nil {
		t.Fatal(err)
	}
	// Tear the last batch, as a crash in the middle of a write would.
	segment := filepath.Join(dir, "00000000000000000000.log")
	fi, err := os.Stat(segment)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(segment, fi.Size()-7); err != nil {
		t.Fatal(err)
	}
	v2, loader2 := openVoter(t, dir)
	defer v2.Close()
	img := loader2.Image()
	if img.Offset != kept.Offset || img.Topics.Topic("payments") != nil || !reflect.DeepEqual(maps.Collect(img.Topics.All()), maps.Collect(kept.Topics.All())) {
		t.Fatalf("after a torn tail: offset %d topics %v", img.Offset, slices.Collect(img.Topics.Names()))
	}
	// The log goes on from where the good part ends.
	last, err := v2.Append(context.Background(), topicRecords("payments", 2, 1))
	if err != nil {
		t.Fatal(err)
	}
	if loader2.Image().Topics.Topic("payments").NumPartitions() != 1 || last != v2.HighWatermark()-1 {
		t.Fatalf("append after recovery: last %d hw %d", last, v2.HighWatermark())
	}
}

func TestSingleVoterRefusals(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "__cluster_metadata-0")
	v, err := NewSingleVoter(SingleVoterConfig{Dir: dir, NodeID: 1, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.Append(context.Background(), []metadata.Record{&metadata.NoOpRecord{}}); !errors.Is(err, ErrNotLeader) {
		t.Fatalf("append before start: %v", err)
	}
	if id, _ := v.Leader(); id != -1 {
		t.Fatalf("leader before start = %d", id)
	}
	if err := v.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := v.Start(context.Background()); err == nil {
		t.Fatal("second start succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := v.Append(ctx, []metadata.Record{&metadata.NoOpRecord{}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("append with a cancelled context: %v", err)
	}
	if _, err := v.Append(context.Background(), nil); err == nil {
		t.Fatal("empty append succeeded")
	}
	if _, err := NewSingleVoter(SingleVoterConfig{NodeID: 1}); err == nil {
		t.Fatal("no dir accepted")
	}
	// A corrupt hard state is an error, not a silent epoch reset.
	bad := filepath.Join(t.TempDir(), "m")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, QuorumStateFileName), []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := NewSingleVoter(SingleVoterConfig{Dir: bad, NodeID: 1, Logger: quietLogger()}); err == nil {
		t.Fatal("corrupt quorum-state accepted")
	}
	var _ Quorum = v
	var _ Listener = (*metadata.Loader)(nil)
}
