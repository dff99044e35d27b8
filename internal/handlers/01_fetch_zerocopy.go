package handlers

// Fetch responses sent with sendfile. readFetch leaves each partition's
// record batches in their segment file (a log.FileRange); the response is
// encoded by hand, field for field as kmsg's FetchResponse.AppendTo encodes
// v4-16, except that a file-backed RecordBatches is its length prefix
// followed by a hole that the connection writer fills from the file.
// 01_fetch_zerocopy_test.go holds the encoder to kmsg byte for byte.

import (
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/log"
	"gregor/internal/network"
)

// fetchResponse is a FetchResponse whose record batches may lie in segment
// files: ranges[t][p], when its Size is not zero, replaces
// Topics[t].Partitions[p].RecordBatches. It implements network.FileResponse.
type fetchResponse struct {
	*kmsg.FetchResponse
	ranges [][]log.FileRange
}

// AppendFrame implements network.FileResponse.
func (r *fetchResponse) AppendFrame(f *network.Frame) {
	appendFetchResponse(f, r.FetchResponse, r.fileRanges())
}

// fileRanges is ranges as the network layer sends them.
func (r *fetchResponse) fileRanges() [][]network.FileRange {
	out := make([][]network.FileRange, len(r.ranges))
	for t, parts := range r.ranges {
		if parts == nil {
			continue
		}
		out[t] = make([]network.FileRange, len(parts))
		for p, rg := range parts {
			out[t][p] = network.FileRange{File: rg.File(), Offset: rg.Position, Size: rg.Size}
		}
	}
	return out
}

// AppendTo encodes the response with the file ranges copied in, for
// writers that do not take holes. A range that cannot be read is encoded as
// empty records, which a consumer reads as "nothing yet".
func (r *fetchResponse) AppendTo(dst []byte) []byte {
	f := network.Frame{Buf: dst}
	appendFetchResponse(&f, r.FetchResponse, r.fileRanges())
	out := make([]byte, 0, len(f.Buf))
	at := 0
	for _, h := range f.Holes {
		out = append(out, f.Buf[at:h.At]...)
		at = h.At
		data := make([]byte, h.Size)
		if _, err := h.File.ReadAt(data, h.Offset); err != nil {
			clear(data)
		}
		out = append(out, data...)
	}
	return append(out, f.Buf[at:]...)
}

// Release implements network.FileResponse.
func (r *fetchResponse) Release() {
	for _, t := range r.ranges {
		for _, rg := range t {
			rg.Release()
		}
	}
}

// appendFetchResponse encodes v (version 4-16) into f, with holes for the
// partitions whose records are in ranges (ranges may be nil).
func appendFetchResponse(f *network.Frame, v *kmsg.FetchResponse, ranges [][]network.FileRange) {
	version := v.Version
	flexible := version >= 12
	dst := f.Buf
	if version >= 1 {
		dst = kbin.AppendInt32(dst, v.ThrottleMillis)
	}
	if version >= 7 {
		dst = kbin.AppendInt16(dst, v.ErrorCode)
		dst = kbin.AppendInt32(dst, v.SessionID)
	}
	dst = appendArrayLen(dst, len(v.Topics), flexible)
	for ti := range v.Topics {
		t := &v.Topics[ti]
		if version <= 12 {
			dst = appendString(dst, t.Topic, flexible)
		} else {
			dst = kbin.AppendUuid(dst, t.TopicID)
		}
		dst = appendArrayLen(dst, len(t.Partitions), flexible)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			dst = kbin.AppendInt32(dst, p.Partition)
			dst = kbin.AppendInt16(dst, p.ErrorCode)
			dst = kbin.AppendInt64(dst, p.HighWatermark)
			if version >= 4 {
				dst = kbin.AppendInt64(dst, p.LastStableOffset)
			}
			if version >= 5 {
				dst = kbin.AppendInt64(dst, p.LogStartOffset)
			}
			if version >= 4 {
				aborted := p.AbortedTransactions
				if flexible {
					dst = kbin.AppendCompactNullableArrayLen(dst, len(aborted), aborted == nil)
				} else {
					dst = kbin.AppendNullableArrayLen(dst, len(aborted), aborted == nil)
				}
				for ai := range aborted {
					a := &aborted[ai]
					dst = kbin.AppendInt64(dst, a.ProducerID)
					dst = kbin.AppendInt64(dst, a.FirstOffset)
					if flexible {
						dst = appendTagsWithCount(dst, &a.UnknownTags)
					}
				}
			}
			if version >= 11 {
				dst = kbin.AppendInt32(dst, p.PreferredReadReplica)
			}
			if ti < len(ranges) && pi < len(ranges[ti]) && ranges[ti][pi].Size > 0 {
				dst = appendBytesLen(dst, int(ranges[ti][pi].Size), flexible)
				f.Buf = dst
				f.AppendRange(ranges[ti][pi])
			} else if flexible {
				dst = kbin.AppendCompactNullableBytes(dst, p.RecordBatches)
			} else {
				dst = kbin.AppendNullableBytes(dst, p.RecordBatches)
			}
			if flexible {
				dst = appendFetchPartitionTags(dst, p)
			}
		}
		if flexible {
			dst = appendTagsWithCount(dst, &t.UnknownTags)
		}
	}
	if flexible {
		count := v.UnknownTags.Len()
		if len(v.Brokers) > 0 {
			count++
		}
		dst = kbin.AppendUvarint(dst, uint32(count))
		if len(v.Brokers) > 0 {
			dst = appendTagged(dst, 0, func(b []byte) []byte {
				b = kbin.AppendCompactArrayLen(b, len(v.Brokers))
				for i := range v.Brokers {
					br := &v.Brokers[i]
					b = kbin.AppendInt32(b, br.NodeID)
					b = kbin.AppendCompactString(b, br.Host)
					b = kbin.AppendInt32(b, br.Port)
					b = kbin.AppendCompactNullableString(b, br.Rack)
					b = appendTagsWithCount(b, &br.UnknownTags)
				}
				return b
			})
		}
		dst = v.UnknownTags.AppendEach(dst)
	}
	f.Buf = dst
}

// appendFetchPartitionTags encodes a partition's tagged fields: diverging
// epoch (0), current leader (1) and snapshot id (2), each only when not at
// its default, then unknown tags.
func appendFetchPartitionTags(dst []byte, p *kmsg.FetchResponseTopicPartition) []byte {
	de, cl, sn := &p.DivergingEpoch, &p.CurrentLeader, &p.SnapshotID
	hasDE := de.Epoch != -1 || de.EndOffset != -1 || de.UnknownTags.Len() > 0
	hasCL := cl.LeaderID != -1 || cl.LeaderEpoch != -1 || cl.UnknownTags.Len() > 0
	hasSN := sn.EndOffset != -1 || sn.Epoch != -1 || sn.UnknownTags.Len() > 0
	count := p.UnknownTags.Len()
	for _, has := range []bool{hasDE, hasCL, hasSN} {
		if has {
			count++
		}
	}
	dst = kbin.AppendUvarint(dst, uint32(count))
	if hasDE {
		dst = appendTagged(dst, 0, func(b []byte) []byte {
			b = kbin.AppendInt32(b, de.Epoch)
			b = kbin.AppendInt64(b, de.EndOffset)
			return appendTagsWithCount(b, &de.UnknownTags)
		})
	}
	if hasCL {
		dst = appendTagged(dst, 1, func(b []byte) []byte {
			b = kbin.AppendInt32(b, cl.LeaderID)
			b = kbin.AppendInt32(b, cl.LeaderEpoch)
			return appendTagsWithCount(b, &cl.UnknownTags)
		})
	}
	if hasSN {
		dst = appendTagged(dst, 2, func(b []byte) []byte {
			b = kbin.AppendInt64(b, sn.EndOffset)
			b = kbin.AppendInt32(b, sn.Epoch)
			return appendTagsWithCount(b, &sn.UnknownTags)
		})
	}
	return p.UnknownTags.AppendEach(dst)
}

// appendTagged appends one tagged field: its tag, its size, its body.
func appendTagged(dst []byte, tag uint32, body func([]byte) []byte) []byte {
	dst = kbin.AppendUvarint(dst, tag)
	b := body(nil)
	dst = kbin.AppendUvarint(dst, uint32(len(b)))
	return append(dst, b...)
}

// appendTagsWithCount appends a struct's tagged-field section when it has
// no known tags: the count, then the unknown tags.
func appendTagsWithCount(dst []byte, tags *kmsg.Tags) []byte {
	dst = kbin.AppendUvarint(dst, uint32(tags.Len()))
	return tags.AppendEach(dst)
}

func appendArrayLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactArrayLen(dst, n)
	}
	return kbin.AppendArrayLen(dst, n)
}

func appendString(dst []byte, s string, flexible bool) []byte {
	if flexible {
		return kbin.AppendCompactString(dst, s)
	}
	return kbin.AppendString(dst, s)
}

// appendBytesLen is the length prefix of a non-null bytes field of n bytes.
func appendBytesLen(dst []byte, n int, flexible bool) []byte {
	if flexible {
		return kbin.AppendUvarint(dst, uint32(n)+1)
	}
	return kbin.AppendInt32(dst, int32(n))
}
