package replica

import (
	"strconv"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/metadata"
)

// Publish applies a new metadata image (metadata.Publisher). The first
// image is reconciled in full. Later ones are applied by their delta: only
// the partitions it created, changed or deleted and the topics whose configs
// it changed are touched, so that a committed metadata batch costs in
// proportion to what it changed, not to the partitions hosted (with 10,000
// partitions, 100 CreateTopics would otherwise cost a million reconciles).
// A change of this broker's dynamic configs, which every topic inherits,
// reconciles in full again.
func (m *Manager) Publish(delta *metadata.Delta, img *metadata.Image) {
	if delta == nil || !m.reconciled || m.brokerConfigsChanged(delta) {
		m.reconcileAll(img)
		m.reconciled = true
		return
	}
	m.image.Store(img)
	m.applyDelta(delta, img)
}

// brokerConfigsChanged reports whether the delta changed the configs of
// this broker or the cluster-wide broker defaults.
func (m *Manager) brokerConfigsChanged(delta *metadata.Delta) bool {
	self := strconv.Itoa(int(m.cfg.NodeID))
	for _, res := range delta.ChangedConfigs() {
		if res.Type == metadata.ConfigResourceBroker && (res.Name == "" || res.Name == self) {
			return true
		}
	}
	return false
}

// applyDelta hosts, updates and removes the partitions the delta touched.
func (m *Manager) applyDelta(delta *metadata.Delta, img *metadata.Image) {
	for _, t := range delta.DeletedTopics() {
		for id := range t.Partitions() {
			tp := log.TopicPartition{Topic: t.Name, Partition: id}
			// A topic recreated under the same name is handled by host.
			if part, ok := m.Hosted(tp); ok && part.TopicID == t.ID {
				m.unhost(tp)
				m.partitionChanged(tp)
			}
		}
	}
	configs := map[string]*config.Topic{}
	resolve := func(topic string) (config.Topic, bool) {
		if cfg, ok := configs[topic]; ok {
			return *cfg, cfg != nil
		}
		cfg, err := config.ResolveTopic(m.Layers(img, topic))
		if err != nil {
			m.cfg.Logger.Error("resolve topic config", "topic", topic, "err", err)
			configs[topic] = nil
			return config.Topic{}, false
		}
		configs[topic] = &cfg
		return cfg, true
	}
	for _, c := range delta.ChangedPartitions() {
		tp := log.TopicPartition{Topic: c.TopicName, Partition: c.Partition}
		if !contains(c.Current.Replicas, m.cfg.NodeID) {
			if _, ok := m.Hosted(tp); ok {
				m.unhost(tp) // reassigned away from this broker
				m.partitionChanged(tp)
			}
			continue
		}
		cfg, ok := resolve(c.TopicName)
		if !ok {
			continue
		}
		if err := m.host(tp, c.TopicID, cfg, c.Current); err != nil {
			m.cfg.Logger.Error("host partition", "partition", tp.String(), "err", err)
		}
		// Leadership, epoch or ISR moved: waiting requests re-check.
		m.partitionChanged(tp)
	}
	for _, res := range delta.ChangedConfigs() {
		t := img.Topics.Topic(res.Name)
		if res.Type != metadata.ConfigResourceTopic || t == nil {
			continue
		}
		cfg, ok := resolve(t.Name)
		if !ok {
			continue
		}
		for id, p := range t.Partitions() {
			tp := log.TopicPartition{Topic: t.Name, Partition: id}
			if _, hosted := m.Hosted(tp); hosted {
				if err := m.host(tp, t.ID, cfg, p); err != nil {
					m.cfg.Logger.Error("host partition", "partition", tp.String(), "err", err)
				}
			}
		}
	}
}

// unhost stops hosting a partition and deletes its log.
func (m *Manager) unhost(tp log.TopicPartition) {
	m.unfollow(tp)
	m.mu.Lock()
	delete(m.partitions, tp)
	m.mu.Unlock()
	m.deleteLog(tp)
}
