package controller

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"

	"gregor/internal/metadata"
)

// This file is Kafka's StripedReplicaPlacer. Brokers are grouped by rack
// (no rack is a rack of its own, sorted first). Each partition takes its
// first replica, the leader, from the next rack in turn that has an unfenced
// broker, and its other replicas from the following racks, unfenced brokers
// before fenced ones. Within a rack the brokers rotate from a random start,
// so leaders and followers spread evenly over brokers and racks; once as
// many partitions as unfenced brokers are placed, racks and brokers are
// shuffled so the same assignments do not repeat. Fenced brokers count
// towards the replication factor (they may be back soon), but a partition
// needs an unfenced leader.

// brokerRing is one rack's fenced or unfenced brokers (Kafka's BrokerList).
type brokerRing struct {
	brokers []int32
	index   int // next position within the current epoch
	offset  int // rotation of the ring
	epoch   int
}

func (r *brokerRing) initialize(rnd *rand.Rand) {
	if len(r.brokers) > 0 {
		slices.Sort(r.brokers)
		r.offset = rnd.IntN(len(r.brokers))
	}
}

func (r *brokerRing) shuffle(rnd *rand.Rand) {
	rnd.Shuffle(len(r.brokers), func(i, j int) { r.brokers[i], r.brokers[j] = r.brokers[j], r.brokers[i] })
}

// next returns the ring's next broker in this epoch, or -1 when every broker
// of the ring was handed out in this epoch. A new epoch rotates the ring by one.
func (r *brokerRing) next(epoch int) int32 {
	if len(r.brokers) == 0 {
		return -1
	}
	if r.epoch != epoch {
		r.epoch = epoch
		r.index = 0
		r.offset = (r.offset + 1) % len(r.brokers)
	}
	if r.index >= len(r.brokers) {
		return -1
	}
	b := r.brokers[(r.index+r.offset)%len(r.brokers)]
	r.index++
	return b
}

type rack struct {
	fenced, unfenced brokerRing
}

func (r *rack) next(epoch int) int32 {
	if b := r.unfenced.next(epoch); b >= 0 {
		return b
	}
	return r.fenced.next(epoch)
}

// rackList is Kafka's RackList: the racks in order and the placement cursor.
type rackList struct {
	rnd         *rand.Rand
	racks       map[string]*rack // by rack name; "\x00" for brokers without a rack
	names       []string
	numTotal    int
	numUnfenced int
	epoch       int
	offset      int
}

// noRack keys brokers without broker.rack; it sorts before every real rack
// name (Kafka's OptionalStringComparator puts the empty Optional first).
const noRack = "\x00"

func newRackList(img *metadata.Image, sessions map[int32]*brokerSession, rnd *rand.Rand) *rackList {
	l := &rackList{rnd: rnd, racks: map[string]*rack{}}
	for _, b := range usableBrokers(img, sessions) {
		name := noRack
		if b.Rack != nil {
			name = *b.Rack
		}
		r := l.racks[name]
		if r == nil {
			r = &rack{}
			l.racks[name] = r
			l.names = append(l.names, name)
		}
		if b.Fenced {
			r.fenced.brokers = append(r.fenced.brokers, b.ID)
		} else {
			r.unfenced.brokers = append(r.unfenced.brokers, b.ID)
			l.numUnfenced++
		}
		l.numTotal++
	}
	slices.SortFunc(l.names, func(a, b string) int {
		switch {
		case a == noRack && b == noRack:
			return 0
		case a == noRack:
			return -1
		case b == noRack:
			return 1
		}
		return cmp.Compare(a, b)
	})
	for _, name := range l.names {
		l.racks[name].fenced.initialize(rnd)
		l.racks[name].unfenced.initialize(rnd)
	}
	if len(l.names) > 0 {
		l.offset = rnd.IntN(len(l.names))
	}
	return l
}

// usableBrokers are the brokers replicas may be placed on (Kafka's
// BrokerHeartbeatManager.usableBrokers): every registered broker, fenced or
// not, except those in a controlled shutdown this controller is running. As
// in Kafka, that is the in-memory state, not the registration's flag, which
// stays set after the broker stopped until it registers again: a broker that
// shut down is a fenced candidate like any other.
func usableBrokers(img *metadata.Image, sessions map[int32]*brokerSession) []*metadata.BrokerRegistration {
	var out []*metadata.BrokerRegistration
	for _, id := range img.SortedBrokerIDs() {
		if s := sessions[id]; s != nil && s.shuttingDown() {
			continue
		}
		out = append(out, img.Brokers[id])
	}
	return out
}

// place returns one partition's replicas.
func (l *rackList) place(replicationFactor int) []int32 {
	// After as many partitions as unfenced brokers, shuffle to avoid
	// repeating the same assignments (never for a single unfenced broker,
	// which would loop forever).
	if l.epoch == l.numUnfenced && l.numUnfenced > 1 {
		l.rnd.Shuffle(len(l.names), func(i, j int) { l.names[i], l.names[j] = l.names[j], l.names[i] })
		for _, name := range l.names {
			l.racks[name].fenced.shuffle(l.rnd)
			l.racks[name].unfenced.shuffle(l.rnd)
		}
		l.epoch = 0
	}
	if l.offset == len(l.names) {
		l.offset = 0
	}
	replicas := make([]int32, 0, replicationFactor)
	// The leader: the next unfenced broker, from the first rack that has one.
	firstRack := l.offset
	for {
		if b := l.racks[l.names[firstRack]].unfenced.next(l.epoch); b >= 0 {
			replicas = append(replicas, b)
			break
		}
		firstRack = (firstRack + 1) % len(l.names)
	}
	// The followers: one rack after another, skipping the leader's rack once.
	rackIndex := l.offset
	for len(replicas) < replicationFactor {
		b := int32(-1)
		for b < 0 {
			if rackIndex == firstRack {
				firstRack = -1
			} else {
				b = l.racks[l.names[rackIndex]].next(l.epoch)
			}
			rackIndex = (rackIndex + 1) % len(l.names)
		}
		replicas = append(replicas, b)
	}
	l.epoch++
	l.offset++
	return replicas
}

// placeReplicas assigns replicas to numPartitions new partitions. Its errors
// are Kafka's InvalidReplicationFactorException messages.
func (c *Controller) placeReplicas(img *metadata.Image, numPartitions int32, replicationFactor int16) ([][]int32, error) {
	l := newRackList(img, c.sessions, c.placement)
	if replicationFactor <= 0 {
		return nil, fmt.Errorf("Invalid replication factor %d: the replication factor must be positive.", replicationFactor)
	}
	if l.numUnfenced == 0 {
		return nil, errors.New("All brokers are currently fenced.")
	}
	if int(replicationFactor) > l.numTotal {
		return nil, fmt.Errorf("The target replication factor of %d cannot be reached because only %d broker(s) are registered.", replicationFactor, l.numTotal)
	}
	out := make([][]int32, numPartitions)
	for i := range out {
		out[i] = l.place(int(replicationFactor))
	}
	return out, nil
}
