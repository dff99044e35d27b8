package metadata

import (
	"cmp"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"gregor/internal/auth/acl"
	"gregor/internal/auth/sasl"
	"gregor/internal/pmap"
)

// Batch is one committed batch of metadata records, as the Raft layer hands
// it to its listeners: the records hold offsets BaseOffset, BaseOffset+1, ...,
// LastOffset. It lives here (not in package raft) so that metadata's Loader
// can be a raft listener while imports keep pointing down.
type Batch struct {
	BaseOffset      int64
	LastOffset      int64
	Epoch           int32
	AppendTimestamp int64
	Records         []Record
}

// Snapshot is a metadata snapshot: the records that rebuild the image as of
// its end offset.
type Snapshot struct {
	// EndOffset is the offset after the last record the snapshot includes
	// (Kafka's snapshot id offset, exclusive); Epoch is the Raft term of
	// that last record.
	EndOffset int64
	Epoch     int32
	Records   []Record
}

// Delta is the difference between a base image and the image after some more
// records (Kafka's MetadataDelta). Replay records into it, then Apply once to
// get the new image; the Delta then describes what changed, for publishers.
// A Delta is not safe for concurrent use.
type Delta struct {
	base    *Image
	applied bool

	offset int64
	epoch  int32

	features       map[string]int16                     // changed features; level 0 = removed
	brokers        map[int32]*BrokerRegistration        // changed registrations
	topics         map[[16]byte]*Topic                  // created or changed topics: as in the base until Apply, then as in the new image
	names          map[string][16]byte                  // names of the topics created in this delta
	created        map[[16]byte]bool                    // topics created in this delta
	deleted        map[[16]byte]*Topic                  // topics of the base deleted in this delta
	changedParts   map[[16]byte]map[int32]*Partition    // partitions created or changed, as they are now
	configs        map[ConfigResource]map[string]string // changed resources (working copies)
	nextProducerID *int64
	scram          map[string]map[int8]sasl.ScramCredential // users whose credentials changed (working copies)
	acls           map[[16]byte]*acl.Binding                // created ACLs; nil = removed
	clientQuotas   map[QuotaEntity]map[string]float64       // entities whose quotas changed (working copies; empty = none left)
}

// NewDelta starts a delta on top of base.
func NewDelta(base *Image) *Delta {
	return &Delta{
		base:         base,
		offset:       base.Offset,
		epoch:        base.Epoch,
		features:     map[string]int16{},
		brokers:      map[int32]*BrokerRegistration{},
		topics:       map[[16]byte]*Topic{},
		names:        map[string][16]byte{},
		created:      map[[16]byte]bool{},
		deleted:      map[[16]byte]*Topic{},
		changedParts: map[[16]byte]map[int32]*Partition{},
		configs:      map[ConfigResource]map[string]string{},
		scram:        map[string]map[int8]sasl.ScramCredential{},
		acls:         map[[16]byte]*acl.Binding{},
		clientQuotas: map[QuotaEntity]map[string]float64{},
	}
}

// Base returns the image the delta started from.
func (d *Delta) Base() *Image { return d.base }

// errApplied guards the immutability of images: after Apply, the delta's
// working copies belong to the new image.
var errApplied = errors.New("metadata delta already applied")

// ReplayBatch replays every record of a batch, with offsets from
// b.BaseOffset, and records the batch's epoch. It replays all records even if
// some fail (as Kafka's loader counts and skips bad records) and returns the
// failures joined.
func (d *Delta) ReplayBatch(b Batch) error {
	if d.applied {
		return errApplied
	}
	var errs []error
	for i, r := range b.Records {
		if err := d.Replay(b.BaseOffset+int64(i), r); err != nil {
			errs = append(errs, err)
		}
	}
	d.epoch = b.Epoch
	if b.LastOffset > d.offset {
		d.offset = b.LastOffset
	}
	return errors.Join(errs...)
}

// Replay applies one record at the given offset.
func (d *Delta) Replay(offset int64, r Record) error {
	if d.applied {
		return errApplied
	}
	if offset > d.offset {
		d.offset = offset
	}
	var err error
	switch r := r.(type) {
	case *TopicRecord:
		err = d.replayTopic(r)
	case *PartitionRecord:
		err = d.replayPartition(r)
	case *PartitionChangeRecord:
		err = d.replayPartitionChange(r)
	case *RemoveTopicRecord:
		err = d.replayRemoveTopic(r)
	case *ConfigRecord:
		d.replayConfig(r)
	case *ClearElrRecord:
		err = d.replayClearELR(r)
	case *FeatureLevelRecord:
		d.features[r.Name] = r.FeatureLevel
	case *RegisterBrokerRecord:
		d.brokers[r.BrokerID] = registrationFromRecord(r)
	case *UnregisterBrokerRecord:
		err = d.replayUnregisterBroker(r)
	case *BrokerRegistrationChangeRecord:
		err = d.replayBrokerChange(r)
	case *FenceBrokerRecord:
		err = d.changeBroker(r.ID, r.Epoch, "fence", func(b *BrokerRegistration) { b.Fenced = true })
	case *UnfenceBrokerRecord:
		err = d.changeBroker(r.ID, r.Epoch, "unfence", func(b *BrokerRegistration) { b.Fenced = false })
	case *ProducerIdsRecord:
		// Kafka's ProducerIdControlManager.replay: ids only move forward,
		// or one could be handed out twice.
		current := d.base.NextProducerID
		if d.nextProducerID != nil {
			current = *d.nextProducerID
		}
		if r.NextProducerID <= current {
			err = fmt.Errorf("producer id block end %d is not above the current %d", r.NextProducerID, current)
			break
		}
		next := r.NextProducerID
		d.nextProducerID = &next
	case *UserScramCredentialRecord:
		d.userScram(r.Name)[r.Mechanism] = sasl.ScramCredential{
			Salt:       slices.Clone(r.Salt),
			StoredKey:  slices.Clone(r.StoredKey),
			ServerKey:  slices.Clone(r.ServerKey),
			Iterations: r.Iterations,
		}
	case *RemoveUserScramCredentialRecord:
		creds := d.userScram(r.Name)
		if _, ok := creds[r.Mechanism]; !ok {
			// Kafka's ScramControlManager fails the same way: the
			// controller only writes removals of credentials that exist.
			err = fmt.Errorf("remove SCRAM credential: user %q has none for mechanism %d", r.Name, r.Mechanism)
			break
		}
		delete(creds, r.Mechanism)
	case *AccessControlEntryRecord:
		b := r.Binding()
		d.acls[r.ID] = &b
	case *RemoveAccessControlEntryRecord:
		if _, ok := d.acl(r.ID); !ok {
			// Kafka's AclControlManager fails the same way: the controller
			// only removes ACLs that exist.
			err = fmt.Errorf("remove ACL: no ACL with id %x", r.ID)
			break
		}
		d.acls[r.ID] = nil
	case *ClientQuotaRecord:
		err = d.replayClientQuota(r)
	case *NoOpRecord:
	default:
		err = fmt.Errorf("%w: type %d", ErrUnknownRecord, r.Type())
	}
	if err != nil {
		return fmt.Errorf("replay record at offset %d: %w", offset, err)
	}
	return nil
}

// topic returns the live topic with an id, as of the records replayed so far.
func (d *Delta) topic(id [16]byte) *Topic {
	if t, ok := d.topics[id]; ok {
		return t
	}
	if _, gone := d.deleted[id]; gone {
		return nil
	}
	return d.base.Topics.TopicByID(id)
}

// topicByName returns the live topic with a name, as of the records replayed so far.
func (d *Delta) topicByName(name string) *Topic {
	if id, ok := d.names[name]; ok {
		return d.topics[id]
	}
	if t := d.base.Topics.Topic(name); t != nil {
		if _, gone := d.deleted[t.ID]; !gone {
			return t
		}
	}
	return nil
}

// changingTopic returns a live topic whose partitions the delta is about
// to change, noting it among the changed topics. Its partitions stay as in
// the base until Apply: the changes collect in changedParts.
func (d *Delta) changingTopic(id [16]byte) (*Topic, error) {
	t := d.topic(id)
	if t == nil {
		return nil, fmt.Errorf("unknown topic id %x", id)
	}
	d.topics[id] = t
	return t, nil
}

// partition returns a partition of a live topic as of the records replayed
// so far, nil if it has none.
func (d *Delta) partition(t *Topic, p int32) *Partition {
	if cur, ok := d.changedParts[t.ID][p]; ok {
		return cur
	}
	return t.Partition(p)
}

func (d *Delta) setPartition(id [16]byte, p int32, part *Partition) {
	m := d.changedParts[id]
	if m == nil {
		m = map[int32]*Partition{}
		d.changedParts[id] = m
	}
	m[p] = part
}

func (d *Delta) replayTopic(r *TopicRecord) error {
	if d.topic(r.TopicID) != nil {
		return fmt.Errorf("topic id %x already exists", r.TopicID)
	}
	if d.topicByName(r.Name) != nil {
		return fmt.Errorf("topic %q already exists", r.Name)
	}
	d.topics[r.TopicID] = &Topic{Name: r.Name, ID: r.TopicID}
	d.created[r.TopicID] = true
	d.names[r.Name] = r.TopicID
	return nil
}

func (d *Delta) replayPartition(r *PartitionRecord) error {
	if _, err := d.changingTopic(r.TopicID); err != nil {
		return fmt.Errorf("partition %d: %w", r.PartitionID, err)
	}
	d.setPartition(r.TopicID, r.PartitionID, partitionFromRecord(r))
	return nil
}

func (d *Delta) replayPartitionChange(r *PartitionChangeRecord) error {
	t, err := d.changingTopic(r.TopicID)
	if err != nil {
		return fmt.Errorf("partition change %d: %w", r.PartitionID, err)
	}
	p := d.partition(t, r.PartitionID)
	if p == nil {
		return fmt.Errorf("partition change: unknown partition %s-%d", t.Name, r.PartitionID)
	}
	d.setPartition(r.TopicID, r.PartitionID, p.merge(r))
	return nil
}

// replayClearELR is Kafka's replay of ClearElrRecord: every partition of
// the topic (of every topic, for an empty name) that has an ELR or a last
// known ELR loses both, which bumps its partition epoch as a change does.
func (d *Delta) replayClearELR(r *ClearElrRecord) error {
	var topics []*Topic
	if r.TopicName != "" {
		t := d.topicByName(r.TopicName)
		if t == nil {
			return fmt.Errorf("clear ELR: unknown topic %s", r.TopicName)
		}
		topics = append(topics, t)
	} else {
		for _, t := range d.base.Topics.All() {
			if d.topic(t.ID) != nil {
				topics = append(topics, d.topic(t.ID))
			}
		}
		for id := range d.created {
			topics = append(topics, d.topics[id])
		}
	}
	for _, t := range topics {
		ids := map[int32]bool{}
		for id := range t.Partitions() {
			ids[id] = true
		}
		for id := range d.changedParts[t.ID] {
			ids[id] = true
		}
		for id := range ids {
			p := d.partition(t, id)
			if p == nil || (len(p.EligibleLeaderReplicas) == 0 && len(p.LastKnownELR) == 0) {
				continue
			}
			if _, err := d.changingTopic(t.ID); err != nil {
				return fmt.Errorf("clear ELR: %w", err)
			}
			change := NewPartitionChangeRecord(t.ID, id)
			change.EligibleLeaderReplicas, change.LastKnownELR = []int32{}, []int32{}
			d.setPartition(t.ID, id, p.merge(change))
		}
	}
	return nil
}

func (d *Delta) replayRemoveTopic(r *RemoveTopicRecord) error {
	t := d.topic(r.TopicID)
	if t == nil {
		return fmt.Errorf("remove topic: unknown topic id %x", r.TopicID)
	}
	if d.created[r.TopicID] {
		delete(d.created, r.TopicID)
		delete(d.names, t.Name)
	} else {
		d.deleted[r.TopicID] = d.base.Topics.TopicByID(r.TopicID)
	}
	delete(d.topics, r.TopicID)
	delete(d.changedParts, r.TopicID)
	// Kafka drops a deleted topic's configs with it, so a later topic of the
	// same name starts from the defaults.
	d.configs[ConfigResource{Type: ConfigResourceTopic, Name: t.Name}] = map[string]string{}
	return nil
}

func (d *Delta) replayConfig(r *ConfigRecord) {
	res := ConfigResource{Type: r.ResourceType, Name: r.ResourceName}
	m, ok := d.configs[res]
	if !ok {
		m = maps.Clone(d.base.Configs(res))
		if m == nil {
			m = map[string]string{}
		}
		d.configs[res] = m
	}
	if r.Value == nil {
		delete(m, r.Name)
	} else {
		m[r.Name] = *r.Value
	}
}

// workingCopy returns the delta's own copy of base[key], kept in changes
// (empty if base has no entry): the configs of a resource, the credentials
// of a user, the quotas of an entity.
func workingCopy[K, K2 comparable, V any](changes, base map[K]map[K2]V, key K) map[K2]V {
	m, ok := changes[key]
	if !ok {
		m = maps.Clone(base[key])
		if m == nil {
			m = map[K2]V{}
		}
		changes[key] = m
	}
	return m
}

// withChanges returns a new map of base's entries with each changed key's
// map put in, or removed where the change left it empty.
func withChanges[K, K2 comparable, V any](base, changes map[K]map[K2]V) map[K]map[K2]V {
	out := make(map[K]map[K2]V, len(base)+len(changes))
	maps.Copy(out, base)
	for key, m := range changes {
		if len(m) == 0 {
			delete(out, key)
		} else {
			out[key] = m
		}
	}
	return out
}

// userScram returns the delta's own copy of a user's credentials (empty if
// the user has none).
func (d *Delta) userScram(user string) map[int8]sasl.ScramCredential {
	return workingCopy(d.scram, d.base.Scram, user)
}

// acl returns an ACL as of the records replayed so far.
func (d *Delta) acl(id [16]byte) (acl.Binding, bool) {
	if b, ok := d.acls[id]; ok {
		if b == nil {
			return acl.Binding{}, false
		}
		return *b, true
	}
	b, ok := d.base.ACLs[id]
	return b, ok
}

// ACLChanges returns the ACLs the delta removed (with the bindings they had
// in the base image) and those it created, for the authorizer
// (acl.Standard.Apply). An ACL created and removed in the delta is in
// neither.
func (d *Delta) ACLChanges() (removed, added map[[16]byte]acl.Binding) {
	removed, added = map[[16]byte]acl.Binding{}, map[[16]byte]acl.Binding{}
	for id, b := range d.acls {
		if old, ok := d.base.ACLs[id]; ok {
			if b != nil && *b == old {
				continue
			}
			removed[id] = old
		}
		if b != nil {
			added[id] = *b
		}
	}
	return removed, added
}

// replayClientQuota sets or removes one key of an entity's quotas (Kafka's
// ClientQuotaDelta.replay): removing a key the entity lacks is no error.
func (d *Delta) replayClientQuota(r *ClientQuotaRecord) error {
	e, err := QuotaEntityFromData(r.Entity)
	if err != nil {
		return fmt.Errorf("client quota %s: %w", r.Key, err)
	}
	m := workingCopy(d.clientQuotas, d.base.ClientQuotas, e)
	if r.Remove {
		delete(m, r.Key)
	} else {
		m[r.Key] = r.Value
	}
	return nil
}

// ClientQuotasChanged reports whether the delta changed any client quota,
// for the broker's quota enforcement to re-read Image.ClientQuotas.
func (d *Delta) ClientQuotasChanged() bool {
	for e, m := range d.clientQuotas {
		if !maps.Equal(m, d.base.ClientQuotas[e]) {
			return true
		}
	}
	return false
}

// broker returns the current registration of a broker, as of the records replayed so far.
func (d *Delta) broker(id int32) *BrokerRegistration {
	if b, ok := d.brokers[id]; ok {
		return b
	}
	return d.base.Brokers[id]
}

// changeBroker applies change to a copy of a broker's registration, which
// must exist with the given epoch (Kafka's ClusterDelta.getBrokerOrThrow).
func (d *Delta) changeBroker(id int32, epoch int64, what string, change func(*BrokerRegistration)) error {
	cur := d.broker(id)
	if cur == nil {
		return fmt.Errorf("%s broker %d: not registered", what, id)
	}
	if cur.Epoch != epoch {
		return fmt.Errorf("%s broker %d: epoch %d, but the registration has epoch %d", what, id, epoch, cur.Epoch)
	}
	n := *cur
	change(&n)
	d.brokers[id] = &n
	return nil
}

// replayUnregisterBroker removes a registration, which must exist with the
// record's epoch (Kafka's ClusterControlManager.replay fails the same way).
// The removal is a nil entry until Apply.
func (d *Delta) replayUnregisterBroker(r *UnregisterBrokerRecord) error {
	cur := d.broker(r.BrokerID)
	if cur == nil {
		return fmt.Errorf("unregister broker %d: not registered", r.BrokerID)
	}
	if cur.Epoch != r.BrokerEpoch {
		return fmt.Errorf("unregister broker %d: epoch %d, but the registration has epoch %d", r.BrokerID, r.BrokerEpoch, cur.Epoch)
	}
	d.brokers[r.BrokerID] = nil
	return nil
}

func (d *Delta) replayBrokerChange(r *BrokerRegistrationChangeRecord) error {
	switch r.Fenced {
	case BrokerUnfenced, BrokerFenceNoChange, BrokerFenced:
	default:
		return fmt.Errorf("broker registration change of broker %d: bad fenced value %d", r.BrokerID, r.Fenced)
	}
	switch r.InControlledShutdown {
	case 0, 1:
	default:
		return fmt.Errorf("broker registration change of broker %d: bad in-controlled-shutdown value %d", r.BrokerID, r.InControlledShutdown)
	}
	return d.changeBroker(r.BrokerID, r.BrokerEpoch, "change", func(b *BrokerRegistration) {
		switch r.Fenced {
		case BrokerUnfenced:
			b.Fenced = false
		case BrokerFenced:
			b.Fenced = true
		}
		if r.InControlledShutdown == 1 {
			b.InControlledShutdown = true
		}
		if len(r.LogDirs) > 0 {
			b.LogDirs = slices.Clone(r.LogDirs)
		}
	})
}

// Apply returns the image after the replayed records. It may be called once;
// the new image shares everything unchanged with the base.
func (d *Delta) Apply() *Image {
	d.applied = true
	img := *d.base
	img.Offset, img.Epoch = d.offset, d.epoch
	if len(d.features) > 0 {
		img.Features = maps.Clone(d.base.Features)
		for name, level := range d.features {
			if level == 0 {
				delete(img.Features, name)
			} else {
				img.Features[name] = level
			}
		}
	}
	if len(d.brokers) > 0 {
		img.Brokers = maps.Clone(d.base.Brokers)
		if img.Brokers == nil {
			img.Brokers = map[int32]*BrokerRegistration{}
		}
		for id, b := range d.brokers {
			if b == nil { // unregistered, or gone in a snapshot
				delete(img.Brokers, id)
			} else {
				img.Brokers[id] = b
			}
		}
	}
	if len(d.topics) > 0 || len(d.deleted) > 0 {
		byName, byID := d.base.Topics.byName, d.base.Topics.byID
		for id, t := range d.deleted {
			byID = byID.Delete(id)
			if cur, _ := byName.Get(t.Name); cur != nil && cur.ID == id {
				byName = byName.Delete(t.Name)
			}
		}
		names := make([]pmap.Entry[string, *Topic], 0, len(d.topics))
		ids := make([]pmap.Entry[[16]byte, *Topic], 0, len(d.topics))
		for id, t := range d.topics {
			if parts := d.changedParts[id]; len(parts) > 0 {
				entries := make([]pmap.Entry[int32, *Partition], 0, len(parts))
				for p, part := range parts {
					entries = append(entries, pmap.Entry[int32, *Partition]{Key: p, Value: part})
				}
				t = &Topic{Name: t.Name, ID: t.ID, partitions: t.partitions.SetMany(entries)}
				d.topics[id] = t
			}
			names = append(names, pmap.Entry[string, *Topic]{Key: t.Name, Value: t})
			ids = append(ids, pmap.Entry[[16]byte, *Topic]{Key: id, Value: t})
		}
		img.Topics = &TopicsImage{byName: byName.SetMany(names), byID: byID.SetMany(ids), leaders: d.leaderCounts()}
	}
	if len(d.configs) > 0 {
		for res, m := range d.configs {
			if len(m) == 0 {
				img.configs = img.configs.Delete(res)
			} else {
				img.configs = img.configs.Set(res, m)
			}
		}
	}
	if d.nextProducerID != nil {
		img.NextProducerID = *d.nextProducerID
	}
	if len(d.scram) > 0 {
		img.Scram = withChanges(d.base.Scram, d.scram)
	}
	if len(d.acls) > 0 {
		img.ACLs = make(map[[16]byte]acl.Binding, len(d.base.ACLs)+len(d.acls))
		maps.Copy(img.ACLs, d.base.ACLs)
		for id, b := range d.acls {
			if b == nil {
				delete(img.ACLs, id)
			} else {
				img.ACLs[id] = *b
			}
		}
	}
	if len(d.clientQuotas) > 0 {
		img.ClientQuotas = withChanges(d.base.ClientQuotas, d.clientQuotas)
	}
	return &img
}

// leaderCounts returns the base image's partitions-led counts after the
// delta's deletions and partition changes: the base's map itself if no
// leader moved, else a copy. O(partitions changed or deleted).
func (d *Delta) leaderCounts() map[int32]int {
	base := d.base.Topics.leaders
	var counts map[int32]int
	adjust := func(broker int32, by int) {
		if counts == nil {
			counts = make(map[int32]int, len(base)+1)
			maps.Copy(counts, base)
		}
		if counts[broker] += by; counts[broker] == 0 {
			delete(counts, broker)
		}
	}
	for _, t := range d.deleted {
		for _, p := range t.Partitions() {
			adjust(p.Leader, -1)
		}
	}
	for id, parts := range d.changedParts {
		var prev *Topic
		if !d.created[id] {
			prev = d.base.Topics.TopicByID(id)
		}
		for p, cur := range parts {
			if prev != nil {
				if old := prev.Partition(p); old != nil {
					if old.Leader == cur.Leader {
						continue
					}
					adjust(old.Leader, -1)
				}
			}
			adjust(cur.Leader, 1)
		}
	}
	if counts == nil {
		return base
	}
	return counts
}

// CreatedTopics returns the topics created by the delta (and not deleted
// again), with their partitions, sorted by name.
func (d *Delta) CreatedTopics() []*Topic {
	var out []*Topic
	for id := range d.created {
		out = append(out, d.topics[id])
	}
	slices.SortFunc(out, func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// DeletedTopics returns the topics of the base image that the delta deleted,
// as they were in the base, sorted by name.
func (d *Delta) DeletedTopics() []*Topic {
	out := slices.Collect(maps.Values(d.deleted))
	slices.SortFunc(out, func(a, b *Topic) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// PartitionChange is one partition created or changed by a delta.
type PartitionChange struct {
	TopicName string
	TopicID   [16]byte
	Partition int32
	Previous  *Partition // nil for a new partition
	Current   *Partition
}

// ChangedPartitions returns every partition the delta created or changed,
// partitions of created topics included and of deleted topics excluded,
// sorted by topic name and partition.
func (d *Delta) ChangedPartitions() []PartitionChange {
	return slices.SortedFunc(d.PartitionChanges(), func(a, b PartitionChange) int {
		return cmp.Or(cmp.Compare(a.TopicName, b.TopicName), cmp.Compare(a.Partition, b.Partition))
	})
}

// PartitionChanges yields the partitions ChangedPartitions returns, in no
// particular order and without collecting them, for a publisher that acts
// on each on its own: a controlled shutdown changes every partition of the
// broker, and sorting 100,000 changes costs more than applying those that
// concern a broker.
func (d *Delta) PartitionChanges() iter.Seq[PartitionChange] {
	return func(yield func(PartitionChange) bool) {
		for id, parts := range d.changedParts {
			t := d.topics[id]
			var prev *Topic
			if !d.created[id] {
				prev = d.base.Topics.TopicByID(id)
			}
			for p, cur := range parts {
				c := PartitionChange{TopicName: t.Name, TopicID: id, Partition: p, Current: cur}
				if prev != nil {
					c.Previous = prev.Partition(p)
				}
				if !yield(c) {
					return
				}
			}
		}
	}
}

// ChangedConfigs returns the resources whose configs the delta changed
// (deleted topics included), sorted by type and name.
func (d *Delta) ChangedConfigs() []ConfigResource {
	return slices.SortedFunc(maps.Keys(d.configs), compareResources)
}

// ChangedBrokers returns the ids of brokers whose registration changed,
// sorted. After a snapshot a broker may also have disappeared: its id is
// listed and the new image has no registration for it.
func (d *Delta) ChangedBrokers() []int32 {
	out := slices.Collect(maps.Keys(d.brokers))
	slices.Sort(out)
	return out
}

// ChangedFeatures returns the features whose finalized level changed (level 0
// = removed).
func (d *Delta) ChangedFeatures() map[string]int16 { return maps.Clone(d.features) }
