// Package assignor holds the client-side partition assignors of Kafka's
// classic consumer group protocol, as pure functions: no network, no
// goroutines, no state between calls.
//
// In a classic group each member sends JoinGroup with the protocol type
// "consumer" and a list of (assignor name, Subscription) pairs, preferred
// first (partition.assignment.strategy). The coordinator picks the assignor
// every member supports ([SelectProtocol]); the leader decodes the members'
// subscriptions ([DecodeSubscription]), runs the assignor ([Assignor.Assign])
// and sends each member its share in SyncGroup ([EncodeAssignment]).
// [JoinProtocols] builds a member's JoinGroup protocol list and [Lead] does
// the leader's steps on a JoinGroup response.
//
// The four assignors are Kafka's, by the names partition.assignment.strategy
// accepts (the protocol name or the Java class name, see [ByName] and
// [ParseStrategy]):
//
//   - "range" ([Range], org.apache.kafka.clients.consumer.RangeAssignor):
//     per topic, contiguous ranges of partitions to the topic's subscribers.
//   - "roundrobin" ([RoundRobin]): all partitions dealt in turn.
//   - "sticky" ([Sticky]): balanced, and keeping each member's previous
//     partitions where balance allows; eager.
//   - "cooperative-sticky" ([CooperativeSticky]): the sticky algorithm under
//     the cooperative protocol (KIP-429).
//
// Members are ordered as Kafka orders them: static members (group.instance.id)
// first by instance id, so a restarted static member gets the same
// partitions. With client.rack set and partition replica racks known
// ([Topic].ReplicaRacks) range and the sticky assignors prefer a member on
// a rack that holds a replica (KIP-881), under the same balance. As in
// Kafka, the sticky assignors take a partition away from a member whose rack
// holds none of its replicas at every rebalance and deal it again, so with
// racks such partitions (and, through balance, others) may move although
// the group did not change.
//
// # Cooperative rebalancing
//
// Under the eager protocol a member gives up all its partitions before it
// rejoins. Under the cooperative protocol it keeps them and reports them as
// Subscription.OwnedPartitions; an assignment must then never hand a
// partition to a new owner in the same generation its old owner loses it
// ([ValidateCooperative] checks this, as Kafka's leader does). The
// cooperative-sticky assignor leaves a moving partition out of the new
// owner's assignment; the old owner sees it missing ([Diff]), revokes it and
// rejoins, and the next rebalance assigns it. [ProtocolFor] tells which
// protocol a consumer's assignor list allows: cooperative only when every
// assignor in it supports it, which is what makes Kafka's two-bounce
// upgrade work (first "cooperative-sticky,range", then "cooperative-sticky").
//
// # Fidelity to Kafka
//
// The algorithms follow Kafka's RangeAssignor, RoundRobinAssignor and
// AbstractStickyAssignor; testdata/*.json holds the inputs and expected
// outputs of Kafka's own tests of them. Where Kafka's sticky result depends
// on the iteration order of a Java HashMap or HashSet (which member keeps an
// extra partition, which moved partition is taken back), this package
// iterates in the same order, computed from Java's String and TopicPartition
// hash codes and HashMap's table layout, so a Go leader and a Java leader
// assign alike (Java's tree bins, for eight or more colliding keys, aside);
// members that share a hash bucket are taken in the order given, as Kafka's
// map keeps the JoinGroup order. Names are compared by bytes where Java
// compares UTF-16 units, which differs only for names mixing characters
// above U+FFFF with ones in U+E000..U+FFFF. Kafka's test-only switch that
// forces rack matching when every partition has replicas on every rack is
// not offered.
package assignor
