package group

// Share group offsets admin (KIP-932's DescribeShareGroupOffsets,
// AlterShareGroupOffsets and DeleteShareGroupOffsets), the shard's half:
// which share-partitions a group has state for, and the records of a
// change to them. The driver (internal/handlers) talks to the share-group
// state persister between the steps:
//
//   - describe: ShareGroupStateTopics, then ReadSummary of each partition;
//   - alter: AlterShareGroupOffsets bumps the group epoch (made a share
//     group if the id is unused), the driver initializes each partition
//     with that epoch as its state epoch and the new start offset, then
//     ShareGroupOffsetsAltered records the partitions initialized;
//   - delete: ShareGroupStateTopics, the driver deletes each partition's
//     state, then ShareGroupOffsetsDeleted forgets the topics.
//
// Alter and delete need the group empty (NON_EMPTY_GROUP), as Kafka: a
// share-partition leader holding the old state is fenced by the new state
// epoch, or finds its state gone, at its next write.

import (
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ShareStateTopic is one topic of a share group's state-partition
// metadata: the partitions initialized (whose state the persister holds)
// and those being initialized.
type ShareStateTopic struct {
	ID           [16]byte
	Name         string
	Initialized  []int32
	Initializing []int32
}

// shareGroupNotFound is GROUP_ID_NOT_FOUND's message for an id that names
// no share group.
func (s *Shard) shareGroupNotFound(groupID string) string {
	if g := s.groups[groupID]; g != nil && g.state != Dead {
		return "Group " + groupID + " is not a share group."
	}
	return "Group " + groupID + " not found."
}

// ShareGroupStateTopics is the state-partition metadata of a share group,
// sorted by topic name, or GROUP_ID_NOT_FOUND with its message. With
// needEmpty, a group with members is NON_EMPTY_GROUP.
func (s *Shard) ShareGroupStateTopics(groupID string, needEmpty bool) ([]ShareStateTopic, int16, string) {
	sg := s.shares[groupID]
	if sg == nil {
		return nil, kerr.GroupIDNotFound.Code, s.shareGroupNotFound(groupID)
	}
	if needEmpty && len(sg.members) > 0 {
		return nil, kerr.NonEmptyGroup.Code, "The group " + groupID + " is not empty."
	}
	byID := map[[16]byte]*ShareStateTopic{}
	get := func(id [16]byte, name string) *ShareStateTopic {
		t := byID[id]
		if t == nil {
			t = &ShareStateTopic{ID: id, Name: name}
			byID[id] = t
		}
		return t
	}
	for id, t := range sg.initialized {
		get(id, t.name).Initialized = sortedPartitions(t.partitions)
	}
	for id, t := range sg.initializing {
		get(id, t.name).Initializing = sortedPartitions(t.partitions)
	}
	out := make([]ShareStateTopic, 0, len(byID))
	for _, t := range byID {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return string(out[i].ID[:]) < string(out[j].ID[:])
	})
	return out, 0, ""
}

// AlterShareGroupOffsets is the first step of an AlterShareGroupOffsets
// (Kafka's alterShareGroupOffsets): the group must be empty
// (NON_EMPTY_GROUP); an unused id becomes an empty share group, one of a
// classic or consumer group is GROUP_ID_NOT_FOUND. The group epoch is
// bumped and returned: the driver initializes the share-partitions with it
// as their state epoch, which is newer than any state the group has
// written, so the old state's leaders are fenced.
func (s *Shard) AlterShareGroupOffsets(groupID string) (stateEpoch int32, code int16, msg string, r Result) {
	if groupID == "" {
		return 0, kerr.InvalidGroupID.Code, "The group id must not be empty.", r
	}
	if g := s.groups[groupID]; g != nil && g.state != Dead {
		return 0, kerr.GroupIDNotFound.Code, "Group " + groupID + " is not a share group.", r
	}
	sg := s.shares[groupID]
	var before map[string][]byte
	if sg == nil {
		sg = newShareGroup(groupID)
		s.shares[groupID] = sg
	} else {
		if len(sg.members) > 0 {
			return 0, kerr.NonEmptyGroup.Code, "The group " + groupID + " is not empty.", r
		}
		before = sg.records()
	}
	sg.epoch++
	if sg.epoch <= sg.initEpoch {
		sg.epoch = sg.initEpoch + 1
	}
	sg.initEpoch = sg.epoch
	r.Records = shareDiff(before, sg.records())
	return sg.epoch, 0, "", r
}

// ShareGroupOffsetsAltered records share-partitions of one topic whose
// state the driver initialized for an AlterShareGroupOffsets: they are
// initialized (and no longer initializing), so that no heartbeat asks for
// them again with another start offset. A group gone meanwhile is left
// alone.
func (s *Shard) ShareGroupOffsetsAltered(groupID string, topicID [16]byte, name string, partitions []int32) Result {
	var r Result
	sg := s.shares[groupID]
	if sg == nil || len(partitions) == 0 {
		return r
	}
	before := sg.records()
	done := sg.initialized[topicID]
	if done == nil {
		done = &shareTopic{name: name, partitions: map[int32]bool{}}
		sg.initialized[topicID] = done
	}
	if sg.deletionsInFlight == 0 {
		// State a failed DeleteGroups left deleting is replaced now.
		delete(sg.deleting, topicID)
	}
	for _, p := range partitions {
		done.partitions[p] = true
		if st := sg.initializing[topicID]; st != nil {
			delete(st.partitions, p)
			if len(st.partitions) == 0 {
				delete(sg.initializing, topicID)
			}
		}
	}
	r.Records = shareDiff(before, sg.records())
	return r
}

// ShareGroupOffsetsDeleted forgets topics whose share-partition state the
// driver deleted for a DeleteShareGroupOffsets (Kafka's
// completeDeleteShareGroupOffsets): a member subscribing to them later
// initializes them anew. A group gone, or joined by a member meanwhile, is
// left alone (NON_EMPTY_GROUP).
func (s *Shard) ShareGroupOffsetsDeleted(groupID string, topics [][16]byte) (int16, Result) {
	var r Result
	sg := s.shares[groupID]
	if sg == nil {
		return kerr.GroupIDNotFound.Code, r
	}
	if len(sg.members) > 0 {
		return kerr.NonEmptyGroup.Code, r
	}
	before := sg.records()
	for _, id := range topics {
		delete(sg.initialized, id)
		delete(sg.initializing, id)
	}
	r.Records = shareDiff(before, sg.records())
	return 0, r
}
