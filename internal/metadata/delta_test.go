package metadata

import (
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func partRec(topic [16]byte, p int32, replicas ...int32) *PartitionRecord {
	return &PartitionRecord{RecordVersion: PartitionRecordVersion, PartitionID: p, TopicID: topic,
		Replicas: replicas, ISR: replicas, RemovingReplicas: []int32{}, AddingReplicas: []int32{},
		Leader: replicas[0], Directories: make([][16]byte, len(replicas))}
}

func broker(id int32, epoch int64, fenced bool) *RegisterBrokerRecord {
	return &RegisterBrokerRecord{RecordVersion: RegisterBrokerRecordVersion, BrokerID: id, BrokerEpoch: epoch, IncarnationID: uuidOf(byte(id)),
		EndPoints: []BrokerEndpoint{{Name: "PLAINTEXT", Host: "localhost", Port: uint16(9090 + id)}}, Features: []BrokerFeature{}, Fenced: fenced}
}

// replayAll replays each batch into a fresh delta on top of the previous image.
func replayAll(t *testing.T, batches ...[]Record) (*Image, *Delta, error) {
	t.Helper()
	img := EmptyImage()
	var d *Delta
	var firstErr error
	offset := int64(0)
	for _, recs := range batches {
		d = NewDelta(img)
		err := d.ReplayBatch(Batch{BaseOffset: offset, LastOffset: offset + int64(len(recs)) - 1, Epoch: 1, Records: recs})
		if err != nil && firstErr == nil {
			firstErr = err
		}
		offset += int64(len(recs))
		img = d.Apply()
	}
	return img, d, firstErr
}

func TestDeltaReplay(t *testing.T) {
	orders, payments := uuidOf(1), uuidOf(2)
	cases := []struct {
		name    string
		batches [][]Record
		wantErr string
		check   func(t *testing.T, img *Image, last *Delta)
	}{{
		name: "create topic with partitions and configs",
		batches: [][]Record{{
			&FeatureLevelRecord{Name: MetadataVersionFeature, FeatureLevel: 25},
			broker(1, 10, false),
			&TopicRecord{Name: "orders", TopicID: orders},
			&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Name: "cleanup.policy", Value: strp("compact")},
			partRec(orders, 0, 1), partRec(orders, 1, 1),
		}},
		check: func(t *testing.T, img *Image, d *Delta) {
			if img.Offset != 5 || img.Epoch != 1 || img.MetadataVersion() != 25 {
				t.Fatalf("offset/epoch/mv = %d/%d/%d", img.Offset, img.Epoch, img.MetadataVersion())
			}
			top := img.Topics.Topic("orders")
			if top == nil || img.Topics.TopicByID(orders) != top || top.NumPartitions() != 2 || top.Partition(1).Leader != 1 {
				t.Fatalf("topic = %+v", top)
			}
			if img.TopicConfigs("orders")["cleanup.policy"] != "compact" {
				t.Fatalf("configs = %v", maps.Collect(img.AllConfigs()))
			}
			if b := img.Brokers[1]; b == nil || b.Fenced || b.Epoch != 10 || b.Listeners[0].Port != 9091 {
				t.Fatalf("broker = %+v", b)
			}
			if c := d.CreatedTopics(); len(c) != 1 || c[0].Name != "orders" {
				t.Fatalf("created = %v", c)
			}
			if c := d.ChangedPartitions(); len(c) != 2 || c[0].Previous != nil || c[1].Partition != 1 {
				t.Fatalf("changed partitions = %+v", c)
			}
			if c := d.ChangedConfigs(); !reflect.DeepEqual(c, []ConfigResource{{ConfigResourceTopic, "orders"}}) {
				t.Fatalf("changed configs = %v", c)
			}
		},
	}, {
		name: "partition change bumps epochs like Kafka",
		batches: [][]Record{
			{&TopicRecord{Name: "orders", TopicID: orders}, partRec(orders, 0, 1, 2, 3)},
			{func() Record {
				r := NewPartitionChangeRecord(orders, 0)
				r.ISR = []int32{1, 2}
				return r
			}(), func() Record {
				r := NewPartitionChangeRecord(orders, 0)
				r.Leader = 2
				return r
			}()},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			p := img.Topics.TopicByID(orders).Partition(0)
			if p.Leader != 2 || p.LeaderEpoch != 1 || p.PartitionEpoch != 2 || !slices.Equal(p.ISR, []int32{1, 2}) || !slices.Equal(p.Replicas, []int32{1, 2, 3}) {
				t.Fatalf("partition = %+v", p)
			}
			c := d.ChangedPartitions()
			if len(c) != 1 || c[0].Previous == nil || c[0].Previous.Leader != 1 || c[0].Current != p {
				t.Fatalf("changes = %+v", c)
			}
			if len(d.CreatedTopics()) != 0 {
				t.Fatal("no topic was created in the last delta")
			}
		},
	}, {
		name: "delete topic drops its partitions and configs",
		batches: [][]Record{
			{&TopicRecord{Name: "orders", TopicID: orders}, partRec(orders, 0, 1),
				&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Name: "retention.ms", Value: strp("1")},
				&TopicRecord{Name: "payments", TopicID: payments}, partRec(payments, 0, 1)},
			{&RemoveTopicRecord{TopicID: orders}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			if img.Topics.Topic("orders") != nil || img.Topics.TopicByID(orders) != nil || img.TopicConfigs("orders") != nil {
				t.Fatalf("orders survived: %v %v", slices.Collect(img.Topics.Names()), maps.Collect(img.AllConfigs()))
			}
			if img.Topics.Topic("payments") == nil {
				t.Fatal("payments lost")
			}
			if del := d.DeletedTopics(); len(del) != 1 || del[0].Name != "orders" || del[0].NumPartitions() != 1 {
				t.Fatalf("deleted = %+v", del)
			}
			if img.Configs(ConfigResource{ConfigResourceTopic, "orders"}) != nil {
				t.Fatal("config entry kept")
			}
		},
	}, {
		name: "create and delete in one delta, then recreate the name",
		batches: [][]Record{{
			&TopicRecord{Name: "orders", TopicID: orders}, partRec(orders, 0, 1),
			&RemoveTopicRecord{TopicID: orders},
			&TopicRecord{Name: "orders", TopicID: payments}, partRec(payments, 0, 1), partRec(payments, 1, 1),
		}},
		check: func(t *testing.T, img *Image, d *Delta) {
			if top := img.Topics.Topic("orders"); top == nil || top.ID != payments || top.NumPartitions() != 2 || img.Topics.Len() != 1 {
				t.Fatalf("topics = %+v", img.Topics)
			}
			if len(d.DeletedTopics()) != 0 || len(d.CreatedTopics()) != 1 {
				t.Fatalf("created %v deleted %v", d.CreatedTopics(), d.DeletedTopics())
			}
		},
	}, {
		name: "configs set, overwrite, delete; broker and cluster resources",
		batches: [][]Record{
			{&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: strp("5")},
				&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "1", Name: "log.cleaner.threads", Value: strp("2")}},
			{&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "", Name: "log.retention.ms", Value: strp("6")},
				&ConfigRecord{ResourceType: ConfigResourceBroker, ResourceName: "1", Name: "log.cleaner.threads"}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			if img.ClusterConfigs()["log.retention.ms"] != "6" || img.BrokerConfigs(1) != nil {
				t.Fatalf("configs = %v", maps.Collect(img.AllConfigs()))
			}
		},
	}, {
		name: "broker fencing by epoch",
		batches: [][]Record{
			{broker(1, 10, true), broker(2, 11, false)},
			{&UnfenceBrokerRecord{ID: 1, Epoch: 10}, &FenceBrokerRecord{ID: 2, Epoch: 11},
				&BrokerRegistrationChangeRecord{RecordVersion: 2, BrokerID: 1, BrokerEpoch: 10, InControlledShutdown: 1}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			if img.Brokers[1].Fenced || !img.Brokers[1].InControlledShutdown || !img.Brokers[2].Fenced {
				t.Fatalf("brokers = %+v %+v", img.Brokers[1], img.Brokers[2])
			}
			if !slices.Equal(d.ChangedBrokers(), []int32{1, 2}) {
				t.Fatalf("changed brokers = %v", d.ChangedBrokers())
			}
		},
	}, {
		name: "unregister removes the registration",
		batches: [][]Record{
			{broker(1, 10, false), broker(2, 11, false)},
			{&UnregisterBrokerRecord{BrokerID: 2, BrokerEpoch: 11}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			if _, ok := img.Brokers[2]; ok || img.Brokers[1] == nil || !slices.Equal(img.SortedBrokerIDs(), []int32{1}) {
				t.Fatalf("brokers = %v", img.SortedBrokerIDs())
			}
			if !slices.Equal(d.ChangedBrokers(), []int32{2}) {
				t.Fatalf("changed brokers = %v", d.ChangedBrokers())
			}
		},
	}, {
		name:    "unregister with a stale epoch fails",
		batches: [][]Record{{broker(1, 10, false)}, {&UnregisterBrokerRecord{BrokerID: 1, BrokerEpoch: 9}}},
		wantErr: "epoch 9",
	}, {
		name:    "unregister of an unknown broker fails",
		batches: [][]Record{{&UnregisterBrokerRecord{BrokerID: 5, BrokerEpoch: 1}}},
		wantErr: "not registered",
	}, {
		name:    "fence with a stale epoch fails and changes nothing",
		batches: [][]Record{{broker(1, 10, false)}, {&FenceBrokerRecord{ID: 1, Epoch: 9}}},
		wantErr: "epoch 9",
		check: func(t *testing.T, img *Image, d *Delta) {
			if img.Brokers[1].Fenced {
				t.Fatal("fenced by a stale epoch")
			}
		},
	}, {
		name:    "partition of an unknown topic fails",
		batches: [][]Record{{partRec(orders, 0, 1)}},
		wantErr: "unknown topic",
	}, {
		name:    "duplicate topic name fails",
		batches: [][]Record{{&TopicRecord{Name: "a", TopicID: orders}}, {&TopicRecord{Name: "a", TopicID: payments}}},
		wantErr: "already exists",
	}, {
		name: "features, producer ids, no-op",
		batches: [][]Record{
			{&FeatureLevelRecord{Name: "group.version", FeatureLevel: 1}, &ProducerIdsRecord{BrokerID: 1, BrokerEpoch: 1, NextProducerID: 1000}},
			{&FeatureLevelRecord{Name: "group.version", FeatureLevel: 0}, &NoOpRecord{}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			if _, ok := img.Features["group.version"]; ok || img.NextProducerID != 1000 || img.Offset != 3 {
				t.Fatalf("features %v next pid %d offset %d", img.Features, img.NextProducerID, img.Offset)
			}
		},
	}, {
		name: "SCRAM credentials set, replaced, removed",
		batches: [][]Record{
			{scramRec("alice", 1, 4096), scramRec("alice", 2, 4096), scramRec("bob", 1, 4096)},
			{scramRec("alice", 1, 8192), &RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 2},
				&RemoveUserScramCredentialRecord{Name: "bob", Mechanism: 1}},
		},
		check: func(t *testing.T, img *Image, d *Delta) {
			c, ok := img.ScramCredential("SCRAM-SHA-256", "alice")
			if !ok || c.Iterations != 8192 || string(c.Salt) != "salt-alice" || string(c.StoredKey) != "stored-alice" || string(c.ServerKey) != "server-alice" {
				t.Fatalf("alice's SHA-256 credential = %+v, %t", c, ok)
			}
			if _, ok := img.ScramCredential("SCRAM-SHA-512", "alice"); ok {
				t.Fatal("alice's SHA-512 credential survived its removal")
			}
			if _, ok := img.Scram["bob"]; ok {
				t.Fatal("bob has no credentials left but keeps an entry")
			}
			if _, ok := img.ScramCredential("PLAIN", "alice"); ok {
				t.Fatal("a non-SCRAM mechanism found a credential")
			}
		},
	}, {
		name:    "removing a SCRAM credential that does not exist fails",
		batches: [][]Record{{scramRec("alice", 1, 4096)}, {&RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 2}}},
		wantErr: `user "alice" has none for mechanism 2`,
		check: func(t *testing.T, img *Image, d *Delta) {
			if _, ok := img.ScramCredential("SCRAM-SHA-256", "alice"); !ok {
				t.Fatal("the failed removal removed another credential")
			}
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			img, d, err := replayAll(t, c.batches...)
			if c.wantErr == "" && err != nil {
				t.Fatalf("replay: %v", err)
			}
			if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("replay error = %v, want %q", err, c.wantErr)
			}
			if c.check != nil {
				c.check(t, img, d)
			}
		})
	}
}

// TestImagesAreImmutable checks that applying a delta never changes the base.
func TestImagesAreImmutable(t *testing.T) {
	orders := uuidOf(1)
	base, _, err := replayAll(t, []Record{broker(1, 1, false), &TopicRecord{Name: "orders", TopicID: orders}, partRec(orders, 0, 1),
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Name: "a", Value: strp("1")}})
	if err != nil {
		t.Fatal(err)
	}
	before := *base.Topics.TopicByID(orders).Partition(0)
	d := NewDelta(base)
	change := NewPartitionChangeRecord(orders, 0)
	change.Leader = NoLeader
	for i, r := range []Record{change, partRec(orders, 1, 1), &FenceBrokerRecord{ID: 1, Epoch: 1},
		&ConfigRecord{ResourceType: ConfigResourceTopic, ResourceName: "orders", Name: "a", Value: strp("2")}} {
		if err := d.Replay(int64(10+i), r); err != nil {
			t.Fatal(err)
		}
	}
	next := d.Apply()
	if got := *base.Topics.TopicByID(orders).Partition(0); !reflect.DeepEqual(got, before) || base.Topics.TopicByID(orders).NumPartitions() != 1 {
		t.Fatalf("base partition changed: %+v", got)
	}
	if base.Brokers[1].Fenced || base.TopicConfigs("orders")["a"] != "1" || base.Offset != 3 {
		t.Fatal("base image changed")
	}
	if next.Topics.TopicByID(orders).Partition(0).Leader != NoLeader || next.Topics.Topic("orders").NumPartitions() != 2 ||
		!next.Brokers[1].Fenced || next.TopicConfigs("orders")["a"] != "2" || next.Offset != 13 {
		t.Fatalf("next image wrong: %+v", next)
	}
	// SCRAM credentials: a delta works on copies too.
	scramBase, _, err := replayAll(t, []Record{scramRec("alice", 1, 4096)})
	if err != nil {
		t.Fatal(err)
	}
	sd := NewDelta(scramBase)
	for i, r := range []Record{scramRec("alice", 2, 4096), &RemoveUserScramCredentialRecord{Name: "alice", Mechanism: 1}, scramRec("bob", 1, 4096)} {
		if err := sd.Replay(int64(1+i), r); err != nil {
			t.Fatal(err)
		}
	}
	scramNext := sd.Apply()
	if len(scramBase.Scram) != 1 || len(scramBase.Scram["alice"]) != 1 || scramBase.Scram["alice"][1].Iterations != 4096 {
		t.Fatalf("base SCRAM credentials changed: %v", scramBase.Scram)
	}
	if len(scramNext.Scram) != 2 || len(scramNext.Scram["alice"]) != 1 || scramNext.Scram["alice"][2].Iterations != 4096 {
		t.Fatalf("next SCRAM credentials: %v", scramNext.Scram)
	}
	if err := d.Replay(20, &NoOpRecord{}); err == nil {
		t.Fatal("replay after Apply must fail")
	}
}

type recordingPublisher struct {
	images  []*Image
	created [][]string
}

func (p *recordingPublisher) Publish(d *Delta, img *Image) {
	p.images = append(p.images, img)
	var names []string
	for _, t := range d.CreatedTopics() {
		names = append(names, t.Name)
	}
	p.created = append(p.created, names)
}

func TestLoaderPublishes(t *testing.T) {
	l := NewLoader("cluster-1", slog.New(slog.DiscardHandler))
	early := &recordingPublisher{}
	l.AddPublisher(early)
	l.HandleCommit(Batch{BaseOffset: 0, LastOffset: 1, Epoch: 2, Records: []Record{&TopicRecord{Name: "a", TopicID: uuidOf(1)}, partRec(uuidOf(1), 0, 1)}})
	l.HandleCommit(Batch{BaseOffset: 5, LastOffset: 5, Epoch: 3, Records: []Record{partRec(uuidOf(9), 0, 1)}}) // bad record
	img := l.Image()
	if img.ClusterID != "cluster-1" || img.Offset != 5 || img.Epoch != 3 || img.Topics.Topic("a") == nil {
		t.Fatalf("image = %+v", img)
	}
	if l.ErrorCount() != 1 {
		t.Fatalf("error count = %d", l.ErrorCount())
	}
	if len(early.images) != 2 || early.images[1] != img || !slices.Equal(early.created[0], []string{"a"}) {
		t.Fatalf("early publisher saw %d images, created %v", len(early.images), early.created)
	}
	late := &recordingPublisher{}
	l.AddPublisher(late)
	if len(late.images) != 1 || late.images[0] != img || !slices.Equal(late.created[0], []string{"a"}) {
		t.Fatalf("late publisher saw %d images, created %v", len(late.images), late.created)
	}
}

// TestCommitSharesUntouchedTopicsAndPartitions checks what makes a commit
// cost O(changed): the new image holds the very same *Topic of every topic
// the delta did not touch, and the same *Partition of every partition it
// did not change, while partitions changed twice in one delta end as the
// last record says and the base keeps its own.
func TestCommitSharesUntouchedTopicsAndPartitions(t *testing.T) {
	var recs []Record
	for i := range 50 {
		id := uuidOf(byte(i + 1))
		recs = append(recs, &TopicRecord{Name: "t" + strings.Repeat("x", i), TopicID: id})
		for p := range int32(20) {
			recs = append(recs, partRec(id, p, 1, 2))
		}
	}
	base, _, err := replayAll(t, recs)
	if err != nil {
		t.Fatal(err)
	}
	target := uuidOf(7)
	first := NewPartitionChangeRecord(target, 3)
	first.Leader = 2
	second := NewPartitionChangeRecord(target, 3)
	second.ISR = []int32{2}
	d := NewDelta(base)
	if err := d.ReplayBatch(Batch{BaseOffset: 2000, LastOffset: 2002, Epoch: 2,
		Records: []Record{first, second, partRec(target, 20, 2, 1)}}); err != nil {
		t.Fatal(err)
	}
	next := d.Apply()
	for name, old := range base.Topics.All() {
		cur := next.Topics.Topic(name)
		if old.ID != target {
			if cur != old || next.Topics.TopicByID(old.ID) != old {
				t.Fatalf("untouched topic %s was copied", name)
			}
			continue
		}
		if cur == old || cur.NumPartitions() != 21 || old.NumPartitions() != 20 {
			t.Fatalf("changed topic: %d partitions, base %d", cur.NumPartitions(), old.NumPartitions())
		}
		for p, part := range old.Partitions() {
			if p != 3 && cur.Partition(p) != part {
				t.Fatalf("unchanged partition %d was copied", p)
			}
		}
		got, was := cur.Partition(3), old.Partition(3)
		if got.Leader != 2 || got.LeaderEpoch != 1 || got.PartitionEpoch != 2 || !slices.Equal(got.ISR, []int32{2}) {
			t.Fatalf("partition 3 after two changes: %+v", got)
		}
		if was.Leader != 1 || was.PartitionEpoch != 0 || !slices.Equal(was.ISR, []int32{1, 2}) {
			t.Fatalf("base partition 3 changed: %+v", was)
		}
	}
	changes := d.ChangedPartitions()
	if len(changes) != 2 || changes[0].Partition != 3 || changes[0].Current != next.Topics.TopicByID(target).Partition(3) ||
		changes[0].Previous != base.Topics.TopicByID(target).Partition(3) || changes[1].Partition != 20 || changes[1].Previous != nil {
		t.Fatalf("changed partitions: %+v", changes)
	}
}

// countLeaders counts the partitions each broker leads by walking them.
func countLeaders(img *Image) map[int32]int {
	out := map[int32]int{}
	for _, t := range img.Topics.All() {
		for _, p := range t.Partitions() {
			out[p.Leader]++
		}
	}
	return out
}

func checkLeaderCounts(t *testing.T, what string, img *Image) {
	t.Helper()
	want := countLeaders(img)
	for b := int32(-1); b <= 5; b++ {
		if got := img.Topics.LeaderCount(b); got != want[b] {
			t.Fatalf("%s: LeaderCount(%d) = %d, walking the partitions counts %d", what, b, got, want[b])
		}
	}
}

// TestLeaderCountsFollowDeltas: the image's leader counts, kept by each
// commit, equal a count over the partitions through random histories of
// creations, leader changes (to a broker, to none, several in one batch),
// partitions added, and topics deleted (also in the batch that created or
// changed them), and after a snapshot.
func TestLeaderCountsFollowDeltas(t *testing.T) {
	for seed := range uint64(4) {
		rng := rand.New(rand.NewPCG(seed, 3))
		l := NewLoader("c", slog.New(slog.DiscardHandler))
		live := map[[16]byte]int32{} // topic -> partitions, as of the records written so far
		var next byte
		offset := int64(0)
		for step := range 300 {
			var recs []Record
			for range 1 + rng.IntN(4) {
				switch op := rng.IntN(10); {
				case op < 3 || len(live) == 0:
					next++
					id := uuidOf(next)
					recs = append(recs, &TopicRecord{Name: fmt.Sprintf("t%d", next), TopicID: id})
					n := int32(1 + rng.IntN(5))
					for p := range n {
						recs = append(recs, partRec(id, p, int32(1+rng.IntN(3)), 4))
					}
					live[id] = n
				case op < 8:
					for id, n := range live {
						r := NewPartitionChangeRecord(id, int32(rng.IntN(int(n))))
						r.Leader = int32(rng.IntN(6)) - 1 // NoLeader .. 4
						recs = append(recs, r)
						break
					}
				case op < 9:
					for id, n := range live {
						recs = append(recs, partRec(id, n, 5, 1))
						live[id] = n + 1
						break
					}
				default:
					for id := range live {
						recs = append(recs, &RemoveTopicRecord{TopicID: id})
						delete(live, id)
						break
					}
				}
			}
			l.HandleCommit(Batch{BaseOffset: offset, LastOffset: offset + int64(len(recs)) - 1, Epoch: 1, Records: recs})
			offset += int64(len(recs))
			if l.ErrorCount() != 0 {
				t.Fatalf("seed %d step %d: %d records failed to replay", seed, step, l.ErrorCount())
			}
			checkLeaderCounts(t, fmt.Sprintf("seed %d step %d", seed, step), l.Image())
		}
		img := l.Image()
		l.HandleSnapshot(Snapshot{EndOffset: offset, Epoch: 1, Records: img.Records()})
		checkLeaderCounts(t, fmt.Sprintf("seed %d after a snapshot", seed), l.Image())
	}
	checkLeaderCounts(t, "by hand", &Image{Topics: NewTopicsImage(NewTopic("h", uuidOf(1), map[int32]*Partition{
		0: {Leader: 1}, 1: {Leader: 1}, 2: {Leader: NoLeader}}))})
}

// TestClearELR: ClearElrRecord clears the ELR and last known ELR of a
// topic's partitions, or of every topic's for an empty name, bumping the
// partition epoch of those it changes only.
func TestClearELR(t *testing.T) {
	a, b := [16]byte{1}, [16]byte{2}
	part := func(id [16]byte, p int32, elr, lke []int32) *PartitionRecord {
		return &PartitionRecord{RecordVersion: 2, TopicID: id, PartitionID: p, Replicas: []int32{1, 2, 3}, ISR: []int32{1},
			RemovingReplicas: []int32{}, AddingReplicas: []int32{}, Leader: 1, EligibleLeaderReplicas: elr, LastKnownELR: lke,
			Directories: make([][16]byte, 3)}
	}
	img := EmptyImage()
	apply := func(recs ...Record) {
		t.Helper()
		d := NewDelta(img)
		if err := d.ReplayBatch(Batch{BaseOffset: img.Offset + 1, LastOffset: img.Offset + int64(len(recs)), Records: recs}); err != nil {
			t.Fatal(err)
		}
		img = d.Apply()
	}
	apply(&TopicRecord{Name: "a", TopicID: a}, part(a, 0, []int32{2}, nil), part(a, 1, nil, nil),
		&TopicRecord{Name: "b", TopicID: b}, part(b, 0, nil, []int32{3}))
	apply(&ClearElrRecord{TopicName: "a"})
	pa0, pa1, pb0 := img.Topics.Topic("a").Partition(0), img.Topics.Topic("a").Partition(1), img.Topics.Topic("b").Partition(0)
	if len(pa0.EligibleLeaderReplicas) != 0 || pa0.PartitionEpoch != 1 || pa1.PartitionEpoch != 0 || len(pb0.LastKnownELR) != 1 {
		t.Fatalf("after clearing a: a-0 %+v, a-1 epoch %d, b-0 %+v", pa0, pa1.PartitionEpoch, pb0)
	}
	apply(&ClearElrRecord{})
	if pb0 = img.Topics.Topic("b").Partition(0); len(pb0.LastKnownELR) != 0 || pb0.PartitionEpoch != 1 || img.Topics.Topic("a").Partition(0).PartitionEpoch != 1 {
		t.Fatalf("after clearing all: b-0 %+v", pb0)
	}
	d := NewDelta(img)
	if err := d.Replay(img.Offset+1, &ClearElrRecord{TopicName: "nope"}); err == nil {
		t.Fatal("clearing an unknown topic's ELR: no error")
	}
}
