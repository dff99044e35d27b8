package replica

import (
	"reflect"
	"strconv"
	"sync"
	"sync/atomic"

	"gregor/internal/config"
	"gregor/internal/log"
	"gregor/internal/metadata"
)

// Publish applies a new metadata image (metadata.Publisher). The first
// image is reconciled in full. Later ones are applied by their delta, as
// Kafka's ReplicaManager.applyDelta: only the partitions it created,
// changed or deleted and the topics whose configs it changed are touched,
// and only their waiting requests are tried again, so that a committed
// metadata batch costs in proportion to what it changed, not to the
// partitions hosted (with 10,000 partitions, 100 CreateTopics would
// otherwise cost a million reconciles). A change of this broker's dynamic
// configs, which every topic inherits, touches the hosted partitions only
// if it changed the topic defaults they resolve to (refreshConfigs).
func (m *Manager) Publish(delta *metadata.Delta, img *metadata.Image) {
	if delta == nil || !m.reconciled {
		m.reconcileAll(img)
		m.reconciled = true
		return
	}
	m.image.Store(img)
	m.applyDelta(delta, img)
	if m.brokerConfigsChanged(delta) && m.topicDefaultsChanged(delta.Base(), img) {
		m.refreshConfigs(img)
	}
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

// topicDefaultsChanged reports whether the config a topic without
// overrides resolves to differs between two images (or fails to resolve
// in either). If it does not, no topic's config changed either: a topic's
// config takes each key from its own override or else from the same
// broker layers, and the checks across keys read only the result.
func (m *Manager) topicDefaultsChanged(old, img *metadata.Image) bool {
	before, err := config.ResolveTopic(m.brokerLayers(old))
	if err != nil {
		return true
	}
	after, err := config.ResolveTopic(m.brokerLayers(img))
	return err != nil || !reflect.DeepEqual(before, after)
}

// brokerLayers are the layers of a topic without overrides.
func (m *Manager) brokerLayers(img *metadata.Image) config.Layers {
	l := m.Layers(img, "")
	l.Topic = nil
	return l
}

// refreshConfigs resolves the config of every hosted partition's topic in
// img again, after the topic defaults changed, and updates (and wakes the
// waiters of) the partitions whose config it changed. It costs
// O(partitions hosted), as Kafka's reconfiguration of every log's default
// config does.
func (m *Manager) refreshConfigs(img *metadata.Image) {
	configs := map[string]*config.Topic{}
	for tp, part := range m.HostedPartitions() {
		cfg, resolved := configs[tp.Topic]
		if !resolved {
			c, err := config.ResolveTopic(m.Layers(img, tp.Topic))
			if err != nil {
				m.cfg.Logger.Error("resolve topic config", "topic", tp.Topic, "err", err)
			} else {
				cfg = &c
			}
			configs[tp.Topic] = cfg
		}
		if cfg == nil || reflect.DeepEqual(part.Config(), *cfg) {
			continue
		}
		part.UpdateConfig(*cfg)
		m.partitionChanged(tp)
	}
}

// applyDelta hosts, updates and removes the partitions the delta touched,
// up to applyWorkers of them at once.
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
	// The partitions of this broker the delta changed, applied at once
	// below: each touches only its own partition.
	var work []func()
	for c := range delta.PartitionChanges() {
		tp := log.TopicPartition{Topic: c.TopicName, Partition: c.Partition}
		if !contains(c.Current.Replicas, m.cfg.NodeID) {
			if _, ok := m.Hosted(tp); ok {
				work = append(work, func() {
					m.unhost(tp) // reassigned away from this broker
					m.partitionChanged(tp)
				})
			}
			continue
		}
		cfg, ok := resolve(c.TopicName)
		if !ok {
			continue
		}
		work = append(work, func() {
			if err := m.host(tp, c.TopicID, cfg, c.Current); err != nil {
				m.cfg.Logger.Error("host partition", "partition", tp.String(), "err", err)
			}
			// Leadership, epoch or ISR moved: waiting requests re-check.
			m.partitionChanged(tp)
		})
	}
	runParallel(work, applyWorkers)
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
				// min.insync.replicas may have changed: acks=all waiters re-check.
				m.partitionChanged(tp)
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

// applyWorkers bounds how many partitions a delta applies at the same
// time. A partition that becomes leader writes and syncs its
// leader-epoch checkpoint; the file system commits syncs of different
// files together, so a delta that hands this broker thousands of
// leaderships (another broker's controlled shutdown) overlaps them instead
// of waiting for each in turn.
const applyWorkers = 8

// runParallel runs every func of work, on up to workers goroutines, and
// returns when all have returned. The funcs must be safe to run
// concurrently with each other.
func runParallel(work []func(), workers int) {
	if workers > len(work) {
		workers = len(work)
	}
	if workers <= 1 {
		for _, w := range work {
			w()
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(work)); i = next.Add(1) - 1 {
				work[i]()
			}
		}()
	}
	wg.Wait()
}
