package metadata

import (
	"bytes"
	"cmp"
	"iter"
	"maps"
	"slices"
	"strings"

	"gregor/internal/auth/acl"
	"gregor/internal/auth/sasl"
)

// Records returns records that, replayed in order into the empty image,
// rebuild img (all but Offset, Epoch and ClusterID, which a snapshot carries
// in its id and header). This is what a metadata snapshot holds (Kafka's
// MetadataImage.write). The order is Kafka's — features, brokers, topics with
// their partitions, configs, client quotas, producer ids, ACLs, SCRAM
// credentials — and within each part sorted, so the same image always gives
// the same records: metadata.version first because every later record is
// read in its light.
func (img *Image) Records() []Record {
	var out []Record
	out = appendFeatureRecords(out, img.Features)
	for _, id := range img.SortedBrokerIDs() {
		out = append(out, registrationRecord(img.Brokers[id]))
	}
	out = appendTopicRecords(out, img.Topics)
	out = appendConfigRecords(out, img.AllConfigs())
	out = appendClientQuotaRecords(out, img.ClientQuotas)
	if img.NextProducerID > 0 {
		// Which broker got the last block is not part of the image; Kafka's
		// ProducerIdsImage writes -1 for both.
		out = append(out, &ProducerIdsRecord{BrokerID: -1, BrokerEpoch: -1, NextProducerID: img.NextProducerID})
	}
	out = appendACLRecords(out, img.ACLs)
	out = appendScramRecords(out, img.Scram)
	return out
}

// appendACLRecords writes the ACLs sorted by id.
func appendACLRecords(out []Record, acls map[[16]byte]acl.Binding) []Record {
	for _, id := range slices.SortedFunc(maps.Keys(acls), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) }) {
		out = append(out, NewAccessControlEntryRecord(id, acls[id]))
	}
	return out
}

// appendClientQuotaRecords writes one ClientQuotaRecord per entity and key,
// entities in CompareQuotaEntities order, keys sorted.
func appendClientQuotaRecords(out []Record, quotas map[QuotaEntity]map[string]float64) []Record {
	for _, e := range slices.SortedFunc(maps.Keys(quotas), CompareQuotaEntities) {
		m := quotas[e]
		for _, key := range slices.Sorted(maps.Keys(m)) {
			out = append(out, NewClientQuotaRecord(e, key, m[key]))
		}
	}
	return out
}

func appendScramRecords(out []Record, scram map[string]map[int8]sasl.ScramCredential) []Record {
	for _, user := range slices.Sorted(maps.Keys(scram)) {
		creds := scram[user]
		for _, mech := range slices.Sorted(maps.Keys(creds)) {
			c := creds[mech]
			c.Salt, c.StoredKey, c.ServerKey = slices.Clone(c.Salt), slices.Clone(c.StoredKey), slices.Clone(c.ServerKey)
			out = append(out, NewUserScramCredentialRecord(user, mech, c))
		}
	}
	return out
}

func appendFeatureRecords(out []Record, features map[string]int16) []Record {
	names := slices.Collect(maps.Keys(features))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(-cmp.Compare(boolInt(a == MetadataVersionFeature), boolInt(b == MetadataVersionFeature)), strings.Compare(a, b))
	})
	for _, name := range names {
		out = append(out, &FeatureLevelRecord{Name: name, FeatureLevel: features[name]})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registrationRecord is the RegisterBrokerRecord that replays to b, fencing
// and controlled-shutdown state included (Kafka's BrokerRegistration.toRecord).
func registrationRecord(b *BrokerRegistration) *RegisterBrokerRecord {
	r := &RegisterBrokerRecord{
		RecordVersion:        RegisterBrokerRecordVersion,
		BrokerID:             b.ID,
		IncarnationID:        b.IncarnationID,
		BrokerEpoch:          b.Epoch,
		Features:             slices.Clone(b.SupportedFeatures),
		Rack:                 b.Rack,
		Fenced:               b.Fenced,
		InControlledShutdown: b.InControlledShutdown,
		LogDirs:              slices.Clone(b.LogDirs),
	}
	if b.Rack != nil {
		rack := *b.Rack
		r.Rack = &rack
	}
	for _, e := range b.Listeners {
		r.EndPoints = append(r.EndPoints, BrokerEndpoint{Name: e.Name, Host: e.Host, Port: uint16(e.Port), SecurityProtocol: e.SecurityProtocol})
	}
	return r
}

func appendTopicRecords(out []Record, topics *TopicsImage) []Record {
	for _, t := range topics.All() {
		out = append(out, &TopicRecord{Name: t.Name, TopicID: t.ID})
		for id, p := range t.Partitions() {
			out = append(out, partitionRecord(t.ID, id, p))
		}
	}
	return out
}

// partitionRecord is the PartitionRecord that replays to p. Its version is
// the lowest that carries every field p has (ELR needs 2, directories 1), so
// the state read back from the encoded record is the same as p, nil-ness of
// the optional lists included.
func partitionRecord(topicID [16]byte, id int32, p *Partition) *PartitionRecord {
	version := int16(0)
	switch {
	case p.EligibleLeaderReplicas != nil || p.LastKnownELR != nil:
		version = 2
	case p.Directories != nil:
		version = 1
	}
	return &PartitionRecord{
		RecordVersion:          version,
		PartitionID:            id,
		TopicID:                topicID,
		Replicas:               slices.Clone(p.Replicas),
		ISR:                    slices.Clone(p.ISR),
		RemovingReplicas:       slices.Clone(p.RemovingReplicas),
		AddingReplicas:         slices.Clone(p.AddingReplicas),
		Leader:                 p.Leader,
		LeaderRecoveryState:    p.LeaderRecoveryState,
		LeaderEpoch:            p.LeaderEpoch,
		PartitionEpoch:         p.PartitionEpoch,
		Directories:            slices.Clone(p.Directories),
		EligibleLeaderReplicas: slices.Clone(p.EligibleLeaderReplicas),
		LastKnownELR:           slices.Clone(p.LastKnownELR),
	}
}

func appendConfigRecords(out []Record, configs iter.Seq2[ConfigResource, map[string]string]) []Record {
	for res, m := range configs {
		for _, name := range slices.Sorted(maps.Keys(m)) {
			value := m[name]
			out = append(out, &ConfigRecord{ResourceType: res.Type, ResourceName: res.Name, Name: name, Value: &value})
		}
	}
	return out
}

func compareResources(a, b ConfigResource) int {
	return cmp.Or(cmp.Compare(a.Type, b.Type), cmp.Compare(a.Name, b.Name))
}
