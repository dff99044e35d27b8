package handlers

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// foreignBrokerResource is Kafka's ConfigAdminManager
// .validateResourceNameIsCurrentNodeId: on a broker listener, a broker
// config resource names the cluster default ("") or this broker, which
// forwards the change to the controller; another broker's configs are
// altered through that broker. It returns the INVALID_REQUEST message, or
// nil when the resource may go on. The controller takes any node id (a
// broker forwarded it, or an admin client bootstrapped from the
// controllers, KIP-919).
func (h *Handlers) foreignBrokerResource(resourceType kmsg.ConfigResourceType, name string) *string {
	if h.controllerListener || resourceType != kmsg.ConfigResourceTypeBroker || name == "" {
		return nil
	}
	id, err := strconv.ParseInt(name, 10, 32)
	if err != nil {
		return nil // the controller refuses it with Kafka's message
	}
	if int32(id) == h.d.NodeID {
		return nil
	}
	msg := fmt.Sprintf("Unexpected broker id, expected %d, but received %s", h.d.NodeID, name)
	return &msg
}

// splitForeignBrokers separates the resources foreignBrokerResource refuses
// from the rest: kind gives a resource's type and name, refuse its
// INVALID_REQUEST answer.
func splitForeignBrokers[Res, Answer any](h *Handlers, resources []Res, kind func(*Res) (kmsg.ConfigResourceType, string),
	refuse func(*Res, *string) Answer) (own []Res, refused []Answer) {
	for i := range resources {
		if msg := h.foreignBrokerResource(kind(&resources[i])); msg != nil {
			refused = append(refused, refuse(&resources[i], msg))
			continue
		}
		own = append(own, resources[i])
	}
	return own, refused
}
