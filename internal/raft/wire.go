package raft

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.etcd.io/raft/v3/raftpb"
)

// RaftMessagesKey is the API key of Gregor's RaftMessages request, which
// carries etcd raft messages between controllers over the controller
// listener. Kafka's keys stop well below it; it is never advertised in
// ApiVersions, so clients never see it.
//
// The request is an ordinary Kafka frame with request header v1
// (non-flexible), version 0, body:
//
//	cluster_id  STRING   the sender's cluster id; a mismatch is refused
//	from        INT32    the sender's node id
//	messages    ARRAY    INT32 count, then per message BYTES (INT32 length
//	                     + a raftpb.Message in protobuf encoding)
//
// The response (response header v0) is:
//
//	error_code  INT16    0, or INCONSISTENT_CLUSTER_ID (104)
//
// Raft tolerates loss, so the sender does not retry; it only reports an
// unreachable peer (and a failed snapshot) back to raft.
const RaftMessagesKey int16 = 10000

// RaftMessagesRequest is Gregor's RaftMessages request.
type RaftMessagesRequest struct {
	Version   int16
	ClusterID string
	From      int32
	Messages  []raftpb.Message
}

var _ kmsg.Request = (*RaftMessagesRequest)(nil)

func (r *RaftMessagesRequest) Key() int16         { return RaftMessagesKey }
func (r *RaftMessagesRequest) MaxVersion() int16  { return 0 }
func (r *RaftMessagesRequest) SetVersion(v int16) { r.Version = v }
func (r *RaftMessagesRequest) GetVersion() int16  { return r.Version }
func (r *RaftMessagesRequest) IsFlexible() bool   { return false }
func (r *RaftMessagesRequest) ResponseKind() kmsg.Response {
	return &RaftMessagesResponse{Version: r.Version}
}

// AppendTo encodes the body.
func (r *RaftMessagesRequest) AppendTo(b []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.ClusterID)))
	b = append(b, r.ClusterID...)
	b = binary.BigEndian.AppendUint32(b, uint32(r.From))
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Messages)))
	for i := range r.Messages {
		m := &r.Messages[i]
		n := m.Size()
		b = binary.BigEndian.AppendUint32(b, uint32(n))
		start := len(b)
		b = append(b, make([]byte, n)...)
		if _, err := m.MarshalTo(b[start:]); err != nil {
			// MarshalTo only fails on a buffer shorter than Size.
			panic(fmt.Sprintf("raft message marshal: %v", err))
		}
	}
	return b
}

var errShortRaftMessages = errors.New("raft messages: truncated")

// ReadFrom decodes the body; it never panics on bad input.
func (r *RaftMessagesRequest) ReadFrom(b []byte) error {
	if len(b) < 2 {
		return errShortRaftMessages
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n > len(b) {
		return errShortRaftMessages
	}
	r.ClusterID = string(b[:n])
	b = b[n:]
	if len(b) < 8 {
		return errShortRaftMessages
	}
	r.From = int32(binary.BigEndian.Uint32(b))
	count := int(binary.BigEndian.Uint32(b[4:]))
	b = b[8:]
	// Each message takes at least its 4-byte length: a count beyond that
	// is a lie, refused before allocating for it.
	if count < 0 || count > len(b)/4 {
		return fmt.Errorf("raft messages: count %d with %d bytes left", count, len(b))
	}
	r.Messages = make([]raftpb.Message, count)
	for i := range count {
		if len(b) < 4 {
			return errShortRaftMessages
		}
		size := int(binary.BigEndian.Uint32(b))
		b = b[4:]
		if size < 0 || size > len(b) {
			return errShortRaftMessages
		}
		if err := r.Messages[i].Unmarshal(b[:size]); err != nil {
			return fmt.Errorf("raft message %d: %w", i, err)
		}
		b = b[size:]
	}
	if len(b) != 0 {
		return fmt.Errorf("raft messages: %d trailing bytes", len(b))
	}
	return nil
}

// RaftMessagesResponse is Gregor's RaftMessages response.
type RaftMessagesResponse struct {
	Version   int16
	ErrorCode int16
}

var _ kmsg.Response = (*RaftMessagesResponse)(nil)

func (r *RaftMessagesResponse) Key() int16         { return RaftMessagesKey }
func (r *RaftMessagesResponse) MaxVersion() int16  { return 0 }
func (r *RaftMessagesResponse) SetVersion(v int16) { r.Version = v }
func (r *RaftMessagesResponse) GetVersion() int16  { return r.Version }
func (r *RaftMessagesResponse) IsFlexible() bool   { return false }
func (r *RaftMessagesResponse) RequestKind() kmsg.Request {
	return &RaftMessagesRequest{Version: r.Version}
}

// AppendTo encodes the body.
func (r *RaftMessagesResponse) AppendTo(b []byte) []byte {
	return binary.BigEndian.AppendUint16(b, uint16(r.ErrorCode))
}

// ReadFrom decodes the body.
func (r *RaftMessagesResponse) ReadFrom(b []byte) error {
	if len(b) != 2 {
		return fmt.Errorf("raft messages response: %d bytes, want 2", len(b))
	}
	r.ErrorCode = int16(binary.BigEndian.Uint16(b))
	return nil
}
