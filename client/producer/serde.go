package producer

// Serializer turns a key or value into bytes: Kafka's Serializer. A nil
// result is a null key or value.
type Serializer[T any] interface {
	Serialize(topic string, headers []Header, data T) ([]byte, error)
}

// SerializerFunc adapts a function to Serializer.
type SerializerFunc[T any] func(topic string, headers []Header, data T) ([]byte, error)

// Serialize calls f.
func (f SerializerFunc[T]) Serialize(topic string, headers []Header, data T) ([]byte, error) {
	return f(topic, headers, data)
}

// ByteArraySerializer passes bytes through (Kafka's ByteArraySerializer).
type ByteArraySerializer struct{}

// Serialize returns data itself.
func (ByteArraySerializer) Serialize(_ string, _ []Header, data []byte) ([]byte, error) {
	return data, nil
}

// StringSerializer writes a string's UTF-8 bytes (Kafka's StringSerializer).
// The empty string is an empty, not a null, key or value.
type StringSerializer struct{}

// Serialize returns the bytes of data.
func (StringSerializer) Serialize(_ string, _ []Header, data string) ([]byte, error) {
	return []byte(data), nil
}
