package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
)

// The pure part of `gregor reassign` (kafka-reassign-partitions): its two
// JSON formats, the placement --generate proposes, and the throttled
// replicas --execute --throttle names. The commands (reassign.go) read the
// cluster and call these.

// anyLogDir is the log_dirs entry that leaves the directory to the broker.
const anyLogDir = "any"

// topicPartition names one partition.
type topicPartition struct {
	topic     string
	partition int32
}

func (tp topicPartition) String() string { return fmt.Sprintf("%s-%d", tp.topic, tp.partition) }

func compareTopicPartitions(a, b topicPartition) int {
	if c := strings.Compare(a.topic, b.topic); c != 0 {
		return c
	}
	return int(a.partition) - int(b.partition)
}

// assignment maps partitions to their replicas, first = preferred leader.
type assignment map[topicPartition][]int32

func (a assignment) sortedPartitions() []topicPartition {
	out := make([]topicPartition, 0, len(a))
	for tp := range a {
		out = append(out, tp)
	}
	slices.SortFunc(out, compareTopicPartitions)
	return out
}

// names is the partitions, sorted, comma separated.
func (a assignment) names() string {
	parts := a.sortedPartitions()
	names := make([]string, len(parts))
	for i, tp := range parts {
		names[i] = tp.String()
	}
	return strings.Join(names, ",")
}

// reassignmentFile is the reassignment JSON: what --generate proposes,
// --execute applies and --verify / --cancel check.
//
//	{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}
type reassignmentFile struct {
	Version    *int                   `json:"version"`
	Partitions []reassignmentFileItem `json:"partitions"`
}

type reassignmentFileItem struct {
	Topic     *string  `json:"topic"`
	Partition *int32   `json:"partition"`
	Replicas  []int32  `json:"replicas"`
	LogDirs   []string `json:"log_dirs,omitempty"`
}

// topicsToMoveFile is --generate's input: {"version":1,"topics":[{"topic":"t"}]}.
type topicsToMoveFile struct {
	Version *int `json:"version"`
	Topics  []struct {
		Topic *string `json:"topic"`
	} `json:"topics"`
}

// checkVersion accepts version 1, the only one Kafka's tool reads (a missing
// version counts as 1, as Kafka's).
func checkVersion(v *int) error {
	if v != nil && *v != 1 {
		return fmt.Errorf("not supported version field value %d", *v)
	}
	return nil
}

// formatAssignment writes an assignment as Kafka's
// formatAsReassignmentJson does: partitions by topic then id, each with
// log_dirs "any".
func formatAssignment(a assignment) string {
	f := struct {
		Version    int                    `json:"version"`
		Partitions []reassignmentFileItem `json:"partitions"`
	}{Version: 1, Partitions: []reassignmentFileItem{}}
	for _, tp := range a.sortedPartitions() {
		topic, partition := tp.topic, tp.partition
		dirs := make([]string, len(a[tp]))
		for i := range dirs {
			dirs[i] = anyLogDir
		}
		f.Partitions = append(f.Partitions, reassignmentFileItem{Topic: &topic, Partition: &partition,
			Replicas: slices.Clone(a[tp]), LogDirs: dirs})
	}
	b, err := json.Marshal(f)
	if err != nil {
		panic(fmt.Sprintf("marshal a reassignment: %v", err)) // plain strings and ints
	}
	return string(b)
}

// decodeStrict decodes one JSON value, refusing unknown fields and trailing data.
func decodeStrict(data []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// parseReassignment reads a reassignment JSON, with Kafka's checks
// (parseExecuteAssignmentArgs): at least one partition, no empty or
// duplicate replica list, no partition twice, log_dirs (if given) as long as
// replicas. Gregor has no AlterReplicaLogDirs, so a log dir other than "any"
// is refused rather than ignored.
func parseReassignment(data []byte) (assignment, []topicPartition, error) {
	var f reassignmentFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, nil, fmt.Errorf("reassignment JSON: %w", err)
	}
	if err := checkVersion(f.Version); err != nil {
		return nil, nil, fmt.Errorf("reassignment JSON: %w", err)
	}
	if len(f.Partitions) == 0 {
		return nil, nil, errors.New("partition reassignment list cannot be empty")
	}
	out := assignment{}
	var order []topicPartition
	for i, p := range f.Partitions {
		if p.Topic == nil || p.Partition == nil || p.Replicas == nil {
			return nil, nil, fmt.Errorf("reassignment JSON: partitions[%d] needs topic, partition and replicas", i)
		}
		tp := topicPartition{*p.Topic, *p.Partition}
		if _, dup := out[tp]; dup {
			return nil, nil, fmt.Errorf("partition reassignment contains duplicate topic partitions: %s", tp)
		}
		if len(p.Replicas) == 0 {
			return nil, nil, fmt.Errorf("partition replica list cannot be empty (%s)", tp)
		}
		if d := duplicateIDs(p.Replicas); len(d) > 0 {
			return nil, nil, fmt.Errorf("partition replica lists may not contain duplicate entries: %s contains multiple entries for %s", tp, joinIDs(d))
		}
		if p.LogDirs != nil {
			if len(p.LogDirs) != len(p.Replicas) {
				return nil, nil, fmt.Errorf("size of replicas list %v is different from size of log dirs list %v for partition %s",
					p.Replicas, p.LogDirs, tp)
			}
			for _, dir := range p.LogDirs {
				if dir != anyLogDir {
					return nil, nil, fmt.Errorf("%s: log dir %q: moving replicas between log directories is not supported (use \"any\")", tp, dir)
				}
			}
		}
		out[tp] = p.Replicas
		order = append(order, tp)
	}
	return out, order, nil
}

// parseTopicsToMove reads --generate's topics JSON: its topics, in order,
// without duplicates.
func parseTopicsToMove(data []byte) ([]string, error) {
	var f topicsToMoveFile
	if err := decodeStrict(data, &f); err != nil {
		return nil, fmt.Errorf("topics-to-move JSON: %w", err)
	}
	if err := checkVersion(f.Version); err != nil {
		return nil, fmt.Errorf("topics-to-move JSON: %w", err)
	}
	var topics []string
	seen := map[string]bool{}
	for i, t := range f.Topics {
		if t.Topic == nil || *t.Topic == "" {
			return nil, fmt.Errorf("topics-to-move JSON: topics[%d] has no topic", i)
		}
		if seen[*t.Topic] {
			return nil, fmt.Errorf("list of topics to reassign contains duplicate entries: %s", *t.Topic)
		}
		seen[*t.Topic] = true
		topics = append(topics, *t.Topic)
	}
	if len(topics) == 0 {
		return nil, errors.New("topics-to-move JSON: no topics")
	}
	return topics, nil
}

// parseBrokerList reads --broker-list: comma separated ids, no duplicates.
func parseBrokerList(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		n, err := strconv.ParseInt(f, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("--broker-list %q: %q is not a broker id", s, f)
		}
		out = append(out, int32(n))
	}
	if d := duplicateIDs(out); len(d) > 0 {
		return nil, fmt.Errorf("broker list contains duplicate entries: %s", joinIDs(d))
	}
	return out, nil
}

func duplicateIDs(ids []int32) []int32 {
	seen := map[int32]bool{}
	var dup []int32
	for _, id := range ids {
		if seen[id] && !slices.Contains(dup, id) {
			dup = append(dup, id)
		}
		seen[id] = true
	}
	return dup
}

func joinIDs(ids []int32) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.Itoa(int(id))
	}
	return strings.Join(s, ",")
}

// placedBroker is a broker a placement may use, with its rack ("" = none).
type placedBroker struct {
	id   int32
	rack string
}

// assignReplicas places nPartitions partitions of replicationFactor replicas
// on brokers as Kafka's AdminUtils.assignReplicasToBrokers does (what
// kafka-reassign-partitions --generate proposes): round robin from a random
// start, the followers of each partition shifted so that partitions
// spread; rack-aware (racks alternate in the broker order, and a partition
// takes a second replica in a rack only when every rack has one) when every
// broker has a rack, an error when only some do.
func assignReplicas(brokers []placedBroker, nPartitions, replicationFactor int, rnd *rand.Rand) (map[int32][]int32, error) {
	if nPartitions <= 0 {
		return nil, errors.New("number of partitions must be larger than 0")
	}
	if replicationFactor <= 0 {
		return nil, errors.New("replication factor must be larger than 0")
	}
	if replicationFactor > len(brokers) {
		return nil, fmt.Errorf("replication factor: %d larger than available brokers: %d", replicationFactor, len(brokers))
	}
	withRack := 0
	for _, b := range brokers {
		if b.rack != "" {
			withRack++
		}
	}
	if withRack != 0 && withRack != len(brokers) {
		return nil, errors.New("not all brokers have rack information; give --disable-rack-aware to place without racks")
	}
	rackOf := map[int32]string{}
	var arranged []int32
	numRacks := 1
	if withRack == 0 {
		for _, b := range brokers {
			arranged = append(arranged, b.id)
		}
		slices.Sort(arranged)
	} else {
		byRack := map[string][]int32{}
		for _, b := range brokers {
			rackOf[b.id] = b.rack
			byRack[b.rack] = append(byRack[b.rack], b.id)
		}
		racks := make([]string, 0, len(byRack))
		for r, ids := range byRack {
			slices.Sort(ids)
			racks = append(racks, r)
		}
		slices.Sort(racks)
		numRacks = len(racks)
		next := map[string]int{}
		for i := 0; len(arranged) < len(brokers); i = (i + 1) % len(racks) {
			r := racks[i]
			if next[r] < len(byRack[r]) {
				arranged = append(arranged, byRack[r][next[r]])
				next[r]++
			}
		}
	}
	n := len(arranged)
	replicaIndex := func(first, shift, j int) int {
		s := 1 + (shift+j)%(n-1)
		return (first + s) % n
	}
	startIndex, shift := rnd.IntN(n), rnd.IntN(n)
	out := map[int32][]int32{}
	for p := 0; p < nPartitions; p++ {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (p + startIndex) % n
		replicas := []int32{arranged[first]}
		if withRack == 0 {
			for j := 0; j < replicationFactor-1; j++ {
				replicas = append(replicas, arranged[replicaIndex(first, shift, j)])
			}
		} else {
			racks := map[string]bool{rackOf[arranged[first]]: true}
			k := 0
			for len(replicas) < replicationFactor {
				b := arranged[replicaIndex(first, shift*numRacks, k)]
				k++
				if (!racks[rackOf[b]] || len(racks) == numRacks) && (!slices.Contains(replicas, b) || len(replicas) == n) {
					replicas = append(replicas, b)
					racks[rackOf[b]] = true
				}
			}
		}
		out[int32(p)] = replicas
	}
	return out, nil
}

// partitionMove is one partition's movement: the replicas that have its
// data (sources) and those that must fetch it (destinations).
type partitionMove struct {
	sources      []int32
	destinations []int32
}

// throttledReplicas computes what --execute --throttle writes, as Kafka's
// calculateLeaderThrottles / calculateFollowerThrottles do: per topic, the
// leader-side list ("partition:broker" of every source) and the
// follower-side list (of every destination that is not a source), and every
// broker that sends or receives.
func throttledReplicas(moves map[topicPartition]partitionMove) (leader, follower map[string]string, brokers []int32) {
	leaderSets, followerSets := map[string][]string{}, map[string][]string{}
	for tp, m := range moves {
		for _, s := range m.sources {
			leaderSets[tp.topic] = append(leaderSets[tp.topic], fmt.Sprintf("%d:%d", tp.partition, s))
			if !slices.Contains(brokers, s) {
				brokers = append(brokers, s)
			}
		}
		if _, ok := followerSets[tp.topic]; !ok {
			followerSets[tp.topic] = []string{}
		}
		for _, d := range m.destinations {
			if !slices.Contains(m.sources, d) {
				followerSets[tp.topic] = append(followerSets[tp.topic], fmt.Sprintf("%d:%d", tp.partition, d))
			}
			if !slices.Contains(brokers, d) {
				brokers = append(brokers, d)
			}
		}
	}
	join := func(sets map[string][]string) map[string]string {
		out := map[string]string{}
		for topic, items := range sets {
			slices.Sort(items) // Kafka's TreeSet of strings
			out[topic] = strings.Join(slices.Compact(items), ",")
		}
		return out
	}
	slices.Sort(brokers)
	return join(leaderSets), join(followerSets), brokers
}
