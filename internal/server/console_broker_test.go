package server

import (
	"testing"

	"gregor/internal/auth"
	"gregor/internal/config"
)

// The console trusts what the listener's trust store says (the listener
// prefix first, as Kafka resolves it) and never takes the key store: the
// broker's own identity is not the console's to use.
func TestConsoleTLSSettings(t *testing.T) {
	props := map[string]string{
		"ssl.truststore.type":                                          "JKS",
		"ssl.truststore.location":                                      "/global/truststore.jks",
		"ssl.truststore.password":                                      "global-pw",
		"listener.name.sasl_ssl.ssl.truststore.type":                   "PEM",
		"listener.name.sasl_ssl.ssl.truststore.location":               "/listener/ca.pem",
		"listener.name.sasl_ssl.ssl.endpoint.identification.algorithm": "",
		"ssl.keystore.location":                                        "/global/keystore.jks",
		"ssl.keystore.password":                                        "keystore-pw",
		"listener.name.sasl_ssl.ssl.keystore.location":                 "/listener/keystore.p12",
	}
	got := consoleTLSSettings(&config.Broker{Props: props}, "SASL_SSL")
	want := auth.TLSSettings{TruststoreType: "PEM", TruststoreLocation: "/listener/ca.pem", TruststorePassword: "global-pw", EndpointIdentification: ""}
	if got.TruststoreType != want.TruststoreType || got.TruststoreLocation != want.TruststoreLocation ||
		got.TruststorePassword != want.TruststorePassword || got.EndpointIdentification != want.EndpointIdentification {
		t.Errorf("SASL_SSL: got %+v, want %+v", got, want)
	}
	if got.KeystoreLocation != "" || got.KeystorePassword != "" || got.KeystoreKey != "" || got.KeyPassword != "" {
		t.Errorf("the console takes the broker's key store: %+v", got)
	}
	other := consoleTLSSettings(&config.Broker{Props: props}, "SSL")
	if other.TruststoreLocation != "/global/truststore.jks" || other.TruststoreType != "JKS" || other.EndpointIdentification != "https" {
		t.Errorf("SSL (no listener prefix): %+v", other)
	}
}

func TestConsoleServerName(t *testing.T) {
	s := &Server{cfg: &config.Broker{AdvertisedListeners: []config.Listener{
		{Name: "SSL", Host: "broker1.example.com", Port: 9093},
		{Name: "WILD", Host: "", Port: 9094},
	}}}
	for _, tc := range []struct {
		l    config.Listener
		want string
	}{
		{config.Listener{Name: "SSL", Host: "0.0.0.0", Port: 9093}, "broker1.example.com"},
		{config.Listener{Name: "WILD", Host: "10.0.0.5", Port: 9094}, "10.0.0.5"},
		{config.Listener{Name: "WILD", Host: "0.0.0.0", Port: 9094}, ""},
		{config.Listener{Name: "NONE", Host: "", Port: 9095}, ""},
	} {
		if got := s.advertisedHost(tc.l); got != tc.want {
			t.Errorf("%v: server name %q, want %q", tc.l, got, tc.want)
		}
	}
}
