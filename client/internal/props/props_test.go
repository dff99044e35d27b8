package props

import "testing"

// TestJavaOnly: the properties shared by every Java client are accepted by
// both Go clients; a client's own ones (serializers) and real settings are
// left to that client.
func TestJavaOnly(t *testing.T) {
	for _, k := range []string{"metric.reporters", "interceptor.classes", "send.buffer.bytes", "socket.connection.setup.timeout.max.ms"} {
		if !JavaOnly(k) {
			t.Errorf("JavaOnly(%q) = false", k)
		}
	}
	for _, k := range []string{"key.serializer", "value.deserializer", "acks", "linger.ms", "bootstrap.servers", ""} {
		if JavaOnly(k) {
			t.Errorf("JavaOnly(%q) = true", k)
		}
	}
}
