package metadata

import (
	"bytes"
	"iter"
	"slices"
	"strconv"

	"gregor/internal/auth/acl"
	"gregor/internal/auth/sasl"
	"gregor/internal/pmap"
)

// Image is the cluster metadata as of one offset of the metadata log (Kafka's
// MetadataImage). An Image is immutable: nobody changes it after Delta.Apply
// returns it, so readers on any goroutine may hold and read one without locks.
// Each committed batch yields a new Image that shares unchanged parts with
// the previous one.
type Image struct {
	// Offset is the offset of the last record replayed into this image, -1
	// for the empty image.
	Offset int64
	// Epoch is the Raft epoch (leader epoch) of the batch holding that record.
	Epoch     int32
	ClusterID string
	// Features maps finalized feature names (metadata.version, ...) to levels.
	Features map[string]int16
	Brokers  map[int32]*BrokerRegistration
	Topics   *TopicsImage
	// configs holds the dynamic configs (ConfigRecords) per resource, in a
	// persistent map since topics' configs grow with the topics. A resource
	// without configs has no entry.
	configs pmap.Map[ConfigResource, map[string]string, resourceOrder]
	// NextProducerID is the first producer id of the next block the
	// controller will hand out (ProducerIdsRecord).
	NextProducerID int64
	// Scram holds the users' SCRAM credentials (UserScramCredentialRecord):
	// user -> mechanism type (sasl.ScramMechanism.Type) -> credential. A user
	// without credentials has no entry. Callers must not modify the maps or
	// the credentials' bytes.
	Scram map[string]map[int8]sasl.ScramCredential
	// ACLs are the cluster's ACLs by id (AccessControlEntryRecord). Callers
	// must not modify the map.
	ACLs map[[16]byte]acl.Binding
	// ClientQuotas are the client quotas (ClientQuotaRecord) per entity:
	// quota key (producer_byte_rate, ...) -> value. An entity without
	// quotas has no entry. Callers must not modify the maps.
	ClientQuotas map[QuotaEntity]map[string]float64
}

// EmptyImage returns the image before any record.
func EmptyImage() *Image {
	return &Image{
		Offset:   -1,
		Epoch:    -1,
		Features: map[string]int16{},
		Brokers:  map[int32]*BrokerRegistration{},
		Topics:   NewTopicsImage(),
		Scram:    map[string]map[int8]sasl.ScramCredential{},
		ACLs:     map[[16]byte]acl.Binding{},

		ClientQuotas: map[QuotaEntity]map[string]float64{},
	}
}

// IsEmpty reports whether no record has been replayed into the image.
func (img *Image) IsEmpty() bool { return img.Offset < 0 }

// MetadataVersion returns the finalized metadata.version level, 0 if unset.
func (img *Image) MetadataVersion() int16 { return img.Features[MetadataVersionFeature] }

// Configs returns the dynamic configs of a resource (nil if none). Callers
// must not modify the map.
func (img *Image) Configs(resource ConfigResource) map[string]string {
	m, _ := img.configs.Get(resource)
	return m
}

// AllConfigs returns every resource's dynamic configs, by type and name.
// Callers must not modify the maps.
func (img *Image) AllConfigs() iter.Seq2[ConfigResource, map[string]string] {
	return img.configs.All()
}

// TopicConfigs returns a topic's dynamic configs (nil if none). Callers must
// not modify the map.
func (img *Image) TopicConfigs(topic string) map[string]string {
	return img.Configs(ConfigResource{Type: ConfigResourceTopic, Name: topic})
}

// BrokerConfigs returns the dynamic configs of one broker (nil if none);
// ClusterConfigs returns the cluster-wide defaults.
func (img *Image) BrokerConfigs(id int32) map[string]string {
	return img.Configs(ConfigResource{Type: ConfigResourceBroker, Name: strconv.Itoa(int(id))})
}

// ClusterConfigs returns the cluster-wide dynamic broker configs (nil if none).
func (img *Image) ClusterConfigs() map[string]string {
	return img.Configs(ConfigResource{Type: ConfigResourceBroker, Name: ""})
}

// ScramCredential returns a user's credential for a SCRAM mechanism named
// as in SaslHandshake (SCRAM-SHA-256, SCRAM-SHA-512); it has the shape of
// sasl.ScramLookup, for the broker to call on its latest image at each
// authentication. The credential's bytes belong to the image: read only.
func (img *Image) ScramCredential(mechanism, user string) (sasl.ScramCredential, bool) {
	m, ok := sasl.ScramMechanismByName(mechanism)
	if !ok {
		return sasl.ScramCredential{}, false
	}
	cred, ok := img.Scram[user][m.Type]
	return cred, ok
}

// SortedBrokerIDs returns the registered broker ids in ascending order.
func (img *Image) SortedBrokerIDs() []int32 {
	ids := make([]int32, 0, len(img.Brokers))
	for id := range img.Brokers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ConfigResource names a resource that has dynamic configs.
type ConfigResource struct {
	Type int8 // ConfigResourceTopic or ConfigResourceBroker
	Name string
}

// resourceOrder orders config resources by type, then name.
type resourceOrder struct{}

func (resourceOrder) Compare(a, b ConfigResource) int { return compareResources(a, b) }

// TopicsImage indexes the topics by name and by id; both indexes hold the
// same *Topic values. The indexes are persistent maps (package pmap): the
// image after a commit shares every untouched topic's entries with the one
// before, so a commit costs O(changed · log topics), not O(topics). The
// zero TopicsImage is empty.
type TopicsImage struct {
	byName pmap.Map[string, *Topic, pmap.Ordered[string]]
	byID   pmap.Map[[16]byte, *Topic, topicIDOrder]
	// leaders counts the partitions each broker leads, NoLeader counting
	// the leaderless ones; a broker leading none has no entry. A commit
	// that moves leaders copies it (one entry per broker), so the
	// controller answers "does broker b still lead anything?" at each
	// heartbeat of a controlled shutdown without walking the partitions.
	leaders map[int32]int
}

// topicIDOrder orders topic ids as bytes.
type topicIDOrder struct{}

func (topicIDOrder) Compare(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }

// NewTopicsImage returns the topics image holding topics (whose names and
// ids must be distinct), for tests and tools that build an image by hand.
func NewTopicsImage(topics ...*Topic) *TopicsImage {
	ti := &TopicsImage{leaders: map[int32]int{}}
	for _, t := range topics {
		ti.byName = ti.byName.Set(t.Name, t)
		ti.byID = ti.byID.Set(t.ID, t)
		for _, p := range t.Partitions() {
			ti.leaders[p.Leader]++
		}
	}
	return ti
}

// LeaderCount returns how many partitions a broker leads; for NoLeader,
// how many partitions have no leader. O(1).
func (ti *TopicsImage) LeaderCount(broker int32) int {
	if ti == nil {
		return 0
	}
	return ti.leaders[broker]
}

// Topic returns the topic with a name, nil if there is none.
func (ti *TopicsImage) Topic(name string) *Topic {
	if ti == nil {
		return nil
	}
	t, _ := ti.byName.Get(name)
	return t
}

// TopicByID returns the topic with an id, nil if there is none.
func (ti *TopicsImage) TopicByID(id [16]byte) *Topic {
	if ti == nil {
		return nil
	}
	t, _ := ti.byID.Get(id)
	return t
}

// Len returns the number of topics.
func (ti *TopicsImage) Len() int {
	if ti == nil {
		return 0
	}
	return ti.byName.Len()
}

// All returns the topics in name order.
func (ti *TopicsImage) All() iter.Seq2[string, *Topic] {
	if ti == nil {
		return func(func(string, *Topic) bool) {}
	}
	return ti.byName.All()
}

// Names returns the topic names in order.
func (ti *TopicsImage) Names() iter.Seq[string] {
	if ti == nil {
		return func(func(string) bool) {}
	}
	return ti.byName.Keys()
}

// Topic is one topic and its partitions. Like the image, a Topic is
// immutable; its partitions are a persistent map, so a commit that changes
// one partition of a big topic copies a path of that map, not the topic.
type Topic struct {
	Name       string
	ID         [16]byte
	partitions pmap.Map[int32, *Partition, pmap.Ordered[int32]]
}

// NewTopic returns a topic with the given partitions, for tests and tools
// that build an image by hand.
func NewTopic(name string, id [16]byte, partitions map[int32]*Partition) *Topic {
	t := &Topic{Name: name, ID: id}
	for p, part := range partitions {
		t.partitions = t.partitions.Set(p, part)
	}
	return t
}

// Partition returns a partition by id, nil if the topic has no such
// partition. Callers must not modify it.
func (t *Topic) Partition(id int32) *Partition {
	p, _ := t.partitions.Get(id)
	return p
}

// NumPartitions returns the number of partitions.
func (t *Topic) NumPartitions() int { return t.partitions.Len() }

// Partitions returns the partitions in id order.
func (t *Topic) Partitions() iter.Seq2[int32, *Partition] { return t.partitions.All() }

// Partition is one partition's replica assignment and leadership
// (Kafka's PartitionRegistration).
type Partition struct {
	Replicas               []int32
	ISR                    []int32
	RemovingReplicas       []int32
	AddingReplicas         []int32
	Leader                 int32
	LeaderRecoveryState    int8
	LeaderEpoch            int32
	PartitionEpoch         int32
	Directories            [][16]byte
	EligibleLeaderReplicas []int32
	LastKnownELR           []int32
}

// Endpoint is one listener of a registered broker.
type Endpoint struct {
	Name             string
	Host             string
	Port             int
	SecurityProtocol int16
}

// BrokerRegistration is a registered broker incarnation.
type BrokerRegistration struct {
	ID                   int32
	IncarnationID        [16]byte
	Epoch                int64
	Listeners            []Endpoint
	SupportedFeatures    []BrokerFeature
	Rack                 *string
	Fenced               bool
	InControlledShutdown bool
	LogDirs              [][16]byte
}

// Listener returns the endpoint with the given listener name.
func (b *BrokerRegistration) Listener(name string) (Endpoint, bool) {
	for _, e := range b.Listeners {
		if e.Name == name {
			return e, true
		}
	}
	return Endpoint{}, false
}

func registrationFromRecord(r *RegisterBrokerRecord) *BrokerRegistration {
	b := &BrokerRegistration{
		ID:                   r.BrokerID,
		IncarnationID:        r.IncarnationID,
		Epoch:                r.BrokerEpoch,
		SupportedFeatures:    slices.Clone(r.Features),
		Rack:                 r.Rack,
		Fenced:               r.Fenced,
		InControlledShutdown: r.InControlledShutdown,
		LogDirs:              slices.Clone(r.LogDirs),
	}
	for _, e := range r.EndPoints {
		b.Listeners = append(b.Listeners, Endpoint{Name: e.Name, Host: e.Host, Port: int(e.Port), SecurityProtocol: e.SecurityProtocol})
	}
	return b
}

func partitionFromRecord(r *PartitionRecord) *Partition {
	return &Partition{
		Replicas:               slices.Clone(r.Replicas),
		ISR:                    slices.Clone(r.ISR),
		RemovingReplicas:       slices.Clone(r.RemovingReplicas),
		AddingReplicas:         slices.Clone(r.AddingReplicas),
		Leader:                 r.Leader,
		LeaderRecoveryState:    r.LeaderRecoveryState,
		LeaderEpoch:            r.LeaderEpoch,
		PartitionEpoch:         r.PartitionEpoch,
		Directories:            slices.Clone(r.Directories),
		EligibleLeaderReplicas: slices.Clone(r.EligibleLeaderReplicas),
		LastKnownELR:           slices.Clone(r.LastKnownELR),
	}
}

// merge returns the partition after a PartitionChangeRecord, as Kafka's
// PartitionRegistration.merge: a new leader (even the same broker) bumps the
// leader epoch, and every change bumps the partition epoch.
func (p *Partition) merge(r *PartitionChangeRecord) *Partition {
	n := *p
	if r.ISR != nil {
		n.ISR = slices.Clone(r.ISR)
	}
	if r.Leader != NoLeaderChange {
		n.Leader = r.Leader
		n.LeaderEpoch = p.LeaderEpoch + 1
	}
	if r.Replicas != nil {
		n.Replicas = slices.Clone(r.Replicas)
	}
	if r.RemovingReplicas != nil {
		n.RemovingReplicas = slices.Clone(r.RemovingReplicas)
	}
	if r.AddingReplicas != nil {
		n.AddingReplicas = slices.Clone(r.AddingReplicas)
	}
	if r.LeaderRecoveryState != NoLeaderRecoveryStateChange {
		n.LeaderRecoveryState = r.LeaderRecoveryState
	}
	if r.EligibleLeaderReplicas != nil {
		n.EligibleLeaderReplicas = slices.Clone(r.EligibleLeaderReplicas)
	}
	if r.LastKnownELR != nil {
		n.LastKnownELR = slices.Clone(r.LastKnownELR)
	}
	if r.Directories != nil {
		n.Directories = slices.Clone(r.Directories)
	}
	n.PartitionEpoch = p.PartitionEpoch + 1
	return &n
}
