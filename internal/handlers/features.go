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
