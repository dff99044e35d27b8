package handlers

import (
	"slices"

	"gregor/internal/metadata"
)

// Finalized feature levels turn APIs on and off cluster-wide, as Kafka's
// KafkaApis checks them per request: an API whose feature is off stays
// advertised (as Kafka advertises it) and answers UNSUPPORTED_VERSION.

// shareGroupsEnabled is Kafka 4.2's isShareGroupProtocolEnabled:
// share.version at least 1. Kafka 4.2 has no broker config for it (the
// early-access group.share.enable is gone), so neither has Gregor.
func (h *Handlers) shareGroupsEnabled() bool {
	return h.image().Features[metadata.ShareVersionFeature] >= 1
}

// consumerGroupProtocolEnabled is Kafka 4.2's isConsumerGroupProtocolEnabled
// for the KIP-848 protocol: "consumer" in group.coordinator.rebalance.protocols
// (Kafka's default "classic,consumer") and group.version at least 1.
func (h *Handlers) consumerGroupProtocolEnabled() bool {
	if h.d.Broker != nil && !slices.Contains(h.d.Broker.GroupCoordinatorRebalanceProtocols, "consumer") {
		return false
	}
	return h.image().Features[metadata.GroupVersionFeature] >= 1
}

// transactionsV2 is Kafka's transaction.version at least 2 (KIP-890 part
// 2): Produce v12+ and TxnOffsetCommit v5+ add their partitions to the
// producer's transaction on its behalf. Older clients, and every client
// below level 2, add partitions themselves (transactions v1).
func (h *Handlers) transactionsV2() bool {
	return h.image().Features[metadata.TransactionVersionFeature] >= 2
}
