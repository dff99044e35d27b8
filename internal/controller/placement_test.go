package controller

import (
	"math/rand/v2"
	"slices"
	"testing"

	"gregor/internal/metadata"
	"gregor/internal/raft"
)

// imageWithBrokers builds an image of registered brokers: id -> rack ("" for
// none), fenced as given.
func imageWithBrokers(t *testing.T, racks map[int32]string, fenced ...int32) *metadata.Image {
	t.Helper()
	b := metadata.Batch{BaseOffset: 0, Epoch: 1}
	b.Records = append(b.Records, &metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion})
	for id, rack := range racks {
		r := &metadata.RegisterBrokerRecord{RecordVersion: metadata.RegisterBrokerRecordVersion, BrokerID: id, BrokerEpoch: int64(id),
			EndPoints: []metadata.BrokerEndpoint{}, Features: []metadata.BrokerFeature{}, Fenced: slices.Contains(fenced, id)}
		if rack != "" {
			r.Rack = &rack
		}
		b.Records = append(b.Records, r)
	}
	b.LastOffset = int64(len(b.Records) - 1)
	d := metadata.NewDelta(metadata.EmptyImage())
	if err := d.ReplayBatch(b); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

func TestStripedPlacementSpreadsRacksAndLeaders(t *testing.T) {
	racks := map[int32]string{1: "a", 2: "a", 3: "b", 4: "b", 5: "c", 6: "c"}
	img := imageWithBrokers(t, racks)
	for seed := range uint64(20) {
		c := &Controller{sessions: map[int32]*brokerSession{}, placement: rand.New(rand.NewPCG(seed, seed))}
		placed, err := c.placeReplicas(img, 60, 3)
		if err != nil {
			t.Fatal(err)
		}
		leaders := map[int32]int{}
		replicas := map[int32]int{}
		for p, rs := range placed {
			seen := map[string]bool{}
			for _, r := range rs {
				seen[racks[r]] = true
				replicas[r]++
			}
			if len(seen) != 3 {
				t.Fatalf("seed %d partition %d = %v: not on 3 racks", seed, p, rs)
			}
			leaders[rs[0]]++
		}
		for id := range racks {
			if leaders[id] != 10 || replicas[id] != 30 {
				t.Fatalf("seed %d: broker %d leads %d and holds %d replicas, want 10 and 30 (%v)", seed, id, leaders[id], replicas[id], placed)
			}
		}
	}
}

func TestStripedPlacementFencedBrokers(t *testing.T) {
	img := imageWithBrokers(t, map[int32]string{1: "", 2: "", 3: ""}, 2, 3)
	c := &Controller{sessions: map[int32]*brokerSession{}, placement: rand.New(rand.NewPCG(1, 1))}
	placed, err := c.placeReplicas(img, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	for p, rs := range placed {
		// The leader must be the only unfenced broker.
		if rs[0] != 1 || len(rs) != 3 {
			t.Fatalf("partition %d = %v", p, rs)
		}
	}
	for _, tc := range []struct {
		img  *metadata.Image
		rf   int16
		want string
	}{
		{img, 0, "Invalid replication factor 0: the replication factor must be positive."},
		{img, 4, "The target replication factor of 4 cannot be reached because only 3 broker(s) are registered."},
		{imageWithBrokers(t, map[int32]string{1: ""}, 1), 1, "All brokers are currently fenced."},
	} {
		if _, err := c.placeReplicas(tc.img, 1, tc.rf); err == nil || err.Error() != tc.want {
			t.Errorf("rf %d: err = %v, want %q", tc.rf, err, tc.want)
		}
	}
	// A broker in controlled shutdown is not usable.
	c.sessions[2] = &brokerSession{controlledShutdownOffset: 5}
	if _, err := c.placeReplicas(img, 1, 3); err == nil {
		t.Fatal("placed on a broker in controlled shutdown")
	}
}

func TestListenerSnapshotRegistrationOffsets(t *testing.T) {
	q, err := raft.NewNode(raft.NodeConfig{Dir: metadataDir(t), NodeID: 1, Voters: []int32{1}, Logger: testConfig().Logger})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	c := New(testConfig(), q)
	c.listener.HandleCommit(metadata.Batch{BaseOffset: 3, LastOffset: 4, Epoch: 1, Records: []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion},
		&metadata.RegisterBrokerRecord{BrokerID: 2, BrokerEpoch: 4, EndPoints: []metadata.BrokerEndpoint{}, Features: []metadata.BrokerFeature{}},
	}})
	if off, ok := c.listener.registrationOffset(2); !ok || off != 4 {
		t.Fatalf("registration offset after commit = %d %v, want 4", off, ok)
	}
	// A snapshot replaces everything; its registrations count as written at
	// its last offset.
	c.listener.HandleSnapshot(metadata.Snapshot{EndOffset: 10, Epoch: 3, Records: []metadata.Record{
		&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: metadata.LatestMetadataVersion},
		&metadata.RegisterBrokerRecord{BrokerID: 1, BrokerEpoch: 7, EndPoints: []metadata.BrokerEndpoint{}, Features: []metadata.BrokerFeature{}},
	}})
	if off, ok := c.listener.registrationOffset(1); !ok || off != 9 {
		t.Fatalf("registration offset after snapshot = %d %v, want 9", off, ok)
	}
	if _, ok := c.listener.registrationOffset(2); ok {
		t.Fatal("broker 2 survived the snapshot")
	}
	if b := c.Image().Brokers[1]; b == nil || b.Epoch != 7 || c.Image().Brokers[2] != nil {
		t.Fatalf("image brokers after snapshot = %v", c.Image().Brokers)
	}
	// Leadership reported for another node: not active.
	c.listener.HandleLeaderChange(2, 4)
	if c.Active() {
		t.Fatal("active while another node leads")
	}
}
