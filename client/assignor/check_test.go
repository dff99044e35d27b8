package assignor

import (
	"fmt"
	"slices"
)

// checkValidAndBalanced is Kafka's verifyValidityAndBalance: members get
// only partitions of topics they subscribe to, no partition twice, every
// partition of a subscribed topic once (when complete), and a member with
// two or more partitions more than another holds none of a topic the other
// subscribes to (else moving one would improve balance).
func checkValidAndBalanced(members []Member, topics map[string]Topic, got Assignment, complete bool) error {
	owner := map[TopicPartition]string{}
	subscribed := map[string]map[string]bool{}
	wanted := map[TopicPartition]bool{}
	for _, m := range members {
		subscribed[m.ID] = topicSet(m.Topics)
		for _, t := range m.Topics {
			for p := int32(0); p < topics[t].Partitions; p++ {
				wanted[TopicPartition{t, p}] = true
			}
		}
	}
	for _, m := range members {
		for _, tp := range got[m.ID] {
			if !subscribed[m.ID][tp.Topic] {
				return fmt.Errorf("%s got %s but does not subscribe to %s", m.ID, tp, tp.Topic)
			}
			if !wanted[tp] {
				return fmt.Errorf("%s got %s, which does not exist", m.ID, tp)
			}
			if o, dup := owner[tp]; dup {
				return fmt.Errorf("%s assigned to both %s and %s", tp, o, m.ID)
			}
			owner[tp] = m.ID
		}
	}
	if complete {
		for tp := range wanted {
			if _, ok := owner[tp]; !ok {
				return fmt.Errorf("%s is not assigned", tp)
			}
		}
	}
	for _, a := range members {
		for _, b := range members {
			if len(got[a.ID]) <= len(got[b.ID])+1 {
				continue
			}
			for _, tp := range got[a.ID] {
				if subscribed[b.ID][tp.Topic] {
					return fmt.Errorf("unbalanced: %s has %d, %s has %d and could take %s", a.ID, len(got[a.ID]), b.ID, len(got[b.ID]), tp)
				}
			}
		}
	}
	return nil
}

// swaps finds two members that traded partitions of one topic between two
// assignments (Kafka's isSticky: a cycle of length two among the moves).
func swaps(before, after Assignment) error {
	from := map[TopicPartition]string{}
	for id, tps := range before {
		for _, tp := range tps {
			from[tp] = id
		}
	}
	type move struct{ topic, src, dst string }
	moves := map[move]TopicPartition{}
	for id, tps := range after {
		for _, tp := range tps {
			if src, ok := from[tp]; ok && src != id {
				moves[move{tp.Topic, src, id}] = tp
			}
		}
	}
	for m, tp := range moves {
		if back, ok := moves[move{m.topic, m.dst, m.src}]; ok {
			return fmt.Errorf("%s moved %s -> %s while %s moved back", tp, m.src, m.dst, back)
		}
	}
	return nil
}

func cloneAssignmentOf(a Assignment) Assignment {
	out := Assignment{}
	for k, v := range a {
		out[k] = slices.Clone(v)
	}
	return out
}
