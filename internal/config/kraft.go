package config

import (
	"fmt"
	"slices"
	"strings"
)

// loadListeners resolves listeners, the security protocol map, the
// controller quorum and the advertised endpoints, and applies Kafka's KRaft
// consistency checks (KafkaConfig.validateValues) for broker-only,
// controller-only and combined nodes.
func loadListeners(b *Broker, v values) ([]Warning, error) {
	var warnings []Warning
	if len(b.ProcessRoles) == 0 {
		return nil, fmt.Errorf("process.roles must contain broker, controller or both: Gregor runs in KRaft mode only")
	}
	isBroker, isController := b.HasRole("broker"), b.HasRole("controller")

	listeners, err := ParseListeners(v.str("listeners"))
	if err != nil {
		return nil, fmt.Errorf("invalid value %q for configuration listeners: %w", v.str("listeners"), err)
	}
	b.Listeners = listeners
	for _, n := range splitList(v.str("controller.listener.names")) {
		b.ControllerListenerNames = append(b.ControllerListenerNames, strings.ToUpper(n))
	}

	protocols, err := ParseProtocolMap(v.str("listener.security.protocol.map"))
	if err != nil {
		return nil, fmt.Errorf("invalid value %q for configuration listener.security.protocol.map: %w", v.str("listener.security.protocol.map"), err)
	}
	if !v.set("listener.security.protocol.map") && !usesSSLOrSASLNames(b) {
		// Kafka: with the default map and nothing secure in use, controller
		// listeners are implicitly PLAINTEXT.
		for _, n := range b.ControllerListenerNames {
			protocols[n] = "PLAINTEXT"
		}
	}
	b.ListenerSecurityProtocolMap = protocols
	for _, l := range listeners {
		if _, ok := protocols[l.Name]; !ok {
			return nil, fmt.Errorf("listener %s in listeners has no security protocol: add %s:<PROTOCOL> to listener.security.protocol.map", l.Name, l.Name)
		}
	}

	advertised := listeners
	if v.set("advertised.listeners") {
		if advertised, err = ParseListeners(v.str("advertised.listeners")); err != nil {
			return nil, fmt.Errorf("invalid value %q for configuration advertised.listeners: %w", v.str("advertised.listeners"), err)
		}
		for _, l := range advertised {
			if _, ok := protocols[l.Name]; !ok {
				return nil, fmt.Errorf("listener %s in advertised.listeners has no security protocol in listener.security.protocol.map", l.Name)
			}
		}
	}
	// Kafka 3.9+ lets advertised.listeners name controller listeners: those
	// are published to the quorum, never to clients.
	for _, l := range advertised {
		if !b.IsControllerListener(l.Name) {
			b.AdvertisedListeners = append(b.AdvertisedListeners, l)
		}
	}
	for _, name := range b.ControllerListenerNames {
		if i := slices.IndexFunc(advertised, func(l Listener) bool { return l.Name == name }); i >= 0 {
			b.AdvertisedControllerListeners = append(b.AdvertisedControllerListeners, advertised[i])
		} else if i := slices.IndexFunc(listeners, func(l Listener) bool { return l.Name == name }); i >= 0 {
			b.AdvertisedControllerListeners = append(b.AdvertisedControllerListeners, listeners[i])
		}
	}
	for _, l := range append(slices.Clone(b.AdvertisedListeners), b.AdvertisedControllerListeners...) {
		if l.Host == "0.0.0.0" {
			return nil, fmt.Errorf("advertised.listeners cannot use the non-routable meta-address 0.0.0.0 (listener %s); set advertised.listeners to a routable address", l.Name)
		}
	}

	w, err := loadQuorum(b, v, isController)
	warnings = append(warnings, w...)
	if err != nil {
		return warnings, err
	}
	voterIDs := make([]int32, len(b.ControllerQuorumVoters))
	for i, vt := range b.ControllerQuorumVoters {
		voterIDs[i] = vt.ID
	}
	listenerNames := make([]string, len(listeners))
	for i, l := range listeners {
		listenerNames[i] = l.Name
	}

	if isController {
		if len(b.AdvertisedControllerListeners) == 0 {
			return warnings, fmt.Errorf("controller.listener.names must contain at least one value appearing in the listeners configuration when running the KRaft controller role")
		}
		for _, n := range b.ControllerListenerNames {
			if !slices.Contains(listenerNames, n) {
				return warnings, fmt.Errorf("controller.listener.names must only contain values appearing in the listeners configuration when running the KRaft controller role: %s is not in listeners", n)
			}
		}
		if len(voterIDs) > 0 && !slices.Contains(voterIDs, b.NodeID) {
			return warnings, fmt.Errorf("if process.roles contains the 'controller' role, the node id %d must be included in the set of voters controller.quorum.voters=%s", b.NodeID, v.str("controller.quorum.voters"))
		}
		if !isBroker && len(b.AdvertisedControllerListeners) != len(listeners) {
			return warnings, fmt.Errorf("the listeners config must only contain KRaft controller listeners from controller.listener.names when process.roles=controller")
		}
	} else {
		if slices.Contains(voterIDs, b.NodeID) {
			return warnings, fmt.Errorf("if process.roles contains just the 'broker' role, the node id %d must not be included in the set of voters controller.quorum.voters=%s", b.NodeID, v.str("controller.quorum.voters"))
		}
		if len(b.ControllerListenerNames) == 0 {
			return warnings, fmt.Errorf("controller.listener.names must contain at least one value when running KRaft with just the broker role")
		}
		for _, n := range b.ControllerListenerNames {
			if slices.Contains(listenerNames, n) {
				return warnings, fmt.Errorf("controller.listener.names must not contain a value appearing in the listeners configuration when running KRaft with just the broker role: %s is in listeners", n)
			}
			if _, ok := protocols[n]; !ok {
				return warnings, fmt.Errorf("controller listener %s named in controller.listener.names has no security protocol in listener.security.protocol.map", n)
			}
		}
		if len(b.ControllerListenerNames) > 1 {
			warnings = append(warnings, Warning(fmt.Sprintf("controller.listener.names has several entries; only the first (%s) is used since process.roles=broker", b.ControllerListenerNames[0])))
		}
	}

	if isBroker {
		if len(b.AdvertisedListeners) == 0 {
			return warnings, fmt.Errorf("there must be at least one broker advertised listener; perhaps all listeners appear in controller.listener.names?")
		}
		for _, l := range b.AdvertisedListeners {
			if !slices.Contains(listenerNames, l.Name) {
				return warnings, fmt.Errorf("advertised.listeners listener names must be equal to or a subset of the ones defined in listeners: %s is not in listeners", l.Name)
			}
		}
		if err := resolveInterBrokerListener(b, v); err != nil {
			return warnings, err
		}
	}
	return warnings, nil
}

func usesSSLOrSASLNames(b *Broker) bool {
	secure := func(n string) bool { return n == "SSL" || n == "SASL_SSL" || n == "SASL_PLAINTEXT" }
	for _, n := range b.ControllerListenerNames {
		if secure(n) {
			return true
		}
	}
	for _, l := range b.Listeners {
		if secure(l.Name) {
			return true
		}
	}
	return false
}

func resolveInterBrokerListener(b *Broker, v values) error {
	name := strings.ToUpper(v.str("inter.broker.listener.name"))
	if name != "" {
		if v.set("security.inter.broker.protocol") {
			return fmt.Errorf("only one of inter.broker.listener.name and security.inter.broker.protocol should be set")
		}
		if _, ok := b.ListenerSecurityProtocolMap[name]; !ok {
			return fmt.Errorf("listener %s defined in inter.broker.listener.name is not in listener.security.protocol.map", name)
		}
	} else {
		name = v.str("security.inter.broker.protocol")
	}
	if b.IsControllerListener(name) {
		return fmt.Errorf("inter.broker.listener.name (%s) must not be a controller listener", name)
	}
	var names []string
	for _, l := range b.AdvertisedListeners {
		if l.Name == name {
			b.InterBrokerListenerName = name
			return nil
		}
		names = append(names, l.Name)
	}
	return fmt.Errorf("inter.broker.listener.name must be a listener name defined in advertised.listeners; the valid options based on the configured listeners are %s, not %s",
		strings.Join(names, ","), name)
}

// loadQuorum resolves controller.quorum.voters. Gregor runs a static quorum
// only. With neither voters nor bootstrap servers set, a controller is the
// single voter at its own controller listener (zero-config mode). A
// controller configured like Kafka 4.0's sample (one bootstrap server, no
// voters, formatted --standalone) is likewise its own single voter.
func loadQuorum(b *Broker, v values, isController bool) ([]Warning, error) {
	var warnings []Warning
	b.ControllerQuorumBootstrapServers = v.list("controller.quorum.bootstrap.servers")
	if v.set("controller.quorum.voters") {
		voters, err := ParseVoters(v.str("controller.quorum.voters"))
		if err != nil {
			return nil, fmt.Errorf("invalid value %q for configuration controller.quorum.voters: %w", v.str("controller.quorum.voters"), err)
		}
		b.ControllerQuorumVoters = voters
		return nil, nil
	}
	bootstrap := b.ControllerQuorumBootstrapServers
	if !isController {
		// A broker-only node cannot guess where the controllers are.
		if len(bootstrap) == 0 {
			return nil, fmt.Errorf("if using process.roles, either controller.quorum.bootstrap.servers must contain the set of bootstrap controllers or controller.quorum.voters must contain a parseable set of controllers")
		}
		return nil, nil
	}
	if len(b.AdvertisedControllerListeners) == 0 {
		return nil, nil // reported by the controller listener checks
	}
	self := b.AdvertisedControllerListeners[0]
	host := self.Host
	if host == "" {
		host = "127.0.0.1"
	}
	voter := Voter{ID: b.NodeID, Host: host, Port: self.Port}
	if len(bootstrap) > 0 {
		_, port, _ := splitHostPort(bootstrap[0])
		if len(bootstrap) != 1 || port != self.Port {
			return nil, fmt.Errorf("controller.quorum.voters must be set: Gregor supports only a static controller quorum, and controller.quorum.bootstrap.servers=%s does not describe this controller alone",
				strings.Join(bootstrap, ","))
		}
		warnings = append(warnings, Warning(fmt.Sprintf(
			"controller.quorum.bootstrap.servers without controller.quorum.voters: Gregor has no dynamic quorum; running as the single voter %s", voter)))
	}
	b.ControllerQuorumVoters = []Voter{voter}
	return warnings, nil
}
