package handlers

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

// randomFetchResponse builds a response at version v with several topics
// and partitions: records inline (some nil, some empty), aborted
// transactions nil, empty or present, and, when tagged, every tagged field
// and some unknown tags.
func randomFetchResponse(rng *rand.Rand, v int16, tagged bool) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = v
	resp.ThrottleMillis = rng.Int32()
	resp.ErrorCode = int16(rng.IntN(100))
	resp.SessionID = rng.Int32()
	for ti := 0; ti < 1+rng.IntN(3); ti++ {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = fmt.Sprintf("topic-%d", rng.IntN(1000))
		fillRandom(rng, t.TopicID[:])
		for pi := 0; pi < 1+rng.IntN(4); pi++ {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32()
			p.ErrorCode = int16(rng.IntN(100))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			p.PreferredReadReplica = rng.Int32N(5) - 1
			switch rng.IntN(3) {
			case 0: // null
			case 1:
				p.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{}
			case 2:
				for i := 0; i < 1+rng.IntN(3); i++ {
					a := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
					a.ProducerID, a.FirstOffset = rng.Int64(), rng.Int64()
					if tagged {
						a.UnknownTags.Set(9, []byte{1, 2})
					}
					p.AbortedTransactions = append(p.AbortedTransactions, a)
				}
			}
			switch rng.IntN(4) {
			case 0:
				p.RecordBatches = nil
			case 1:
				p.RecordBatches = []byte{}
			default:
				p.RecordBatches = make([]byte, 1+rng.IntN(40000))
				fillRandom(rng, p.RecordBatches)
			}
			if tagged {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32(), rng.Int64()
				p.CurrentLeader.LeaderID, p.CurrentLeader.LeaderEpoch = rng.Int32(), rng.Int32()
				p.SnapshotID.EndOffset, p.SnapshotID.Epoch = rng.Int64(), rng.Int32()
				if rng.IntN(2) == 0 {
					p.CurrentLeader.UnknownTags.Set(7, []byte{3})
					p.UnknownTags.Set(11, []byte("x"))
				}
			}
			t.Partitions = append(t.Partitions, p)
		}
		if tagged {
			t.UnknownTags.Set(5, []byte("topic tag"))
		}
		resp.Topics = append(resp.Topics, t)
	}
	if tagged {
		rack := "rack-a"
		resp.Brokers = []kmsg.FetchResponseBroker{{NodeID: 1, Host: "h1", Port: 9092, Rack: &rack}, {NodeID: 2, Host: "h2", Port: 9093}}
		resp.UnknownTags.Set(3, []byte("top"))
	}
	return resp
}

// TestFetchEncoderMatchesKmsg holds the hand encoder to kmsg's AppendTo,
// byte for byte, for every served version, with and without tagged fields:
// first with the records inline, then with every non-empty RecordBatches
// moved into a file and sent as a hole.
func TestFetchEncoderMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	file, err := os.Create(filepath.Join(t.TempDir(), "records"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for v := fetchAPI.min; v <= fetchAPI.max; v++ {
		for _, tagged := range []bool{false, true} {
			for round := 0; round < 20; round++ {
				resp := randomFetchResponse(rng, v, tagged)
				want := resp.AppendTo(nil)

				var f network.Frame
				appendFetchResponse(&f, resp, nil)
				if len(f.Holes) != 0 || !bytes.Equal(f.Buf, want) {
					t.Fatalf("v%d tagged=%v: inline encoding differs from kmsg", v, tagged)
				}

				// Move the records into the file; the encoder leaves holes.
				ranges := make([][]network.FileRange, len(resp.Topics))
				for ti := range resp.Topics {
					ranges[ti] = make([]network.FileRange, len(resp.Topics[ti].Partitions))
					for pi := range resp.Topics[ti].Partitions {
						p := &resp.Topics[ti].Partitions[pi]
						if len(p.RecordBatches) == 0 {
							continue
						}
						off, err := file.Seek(0, 2)
						if err != nil {
							t.Fatal(err)
						}
						if _, err := file.Write(p.RecordBatches); err != nil {
							t.Fatal(err)
						}
						ranges[ti][pi] = network.FileRange{File: file, Offset: off, Size: int64(len(p.RecordBatches))}
						p.RecordBatches = nil
					}
				}
				f = network.Frame{}
				appendFetchResponse(&f, resp, ranges)
				if got := splice(t, f); !bytes.Equal(got, want) {
					t.Fatalf("v%d tagged=%v: encoding with %d holes differs from kmsg", v, tagged, len(f.Holes))
				}
			}
		}
	}
}

// splice fills a frame's holes from their files.
func splice(t *testing.T, f network.Frame) []byte {
	t.Helper()
	var out []byte
	at := 0
	for _, h := range f.Holes {
		out = append(out, f.Buf[at:h.At]...)
		at = h.At
		data := make([]byte, h.Size)
		if _, err := h.File.ReadAt(data, h.Offset); err != nil {
			t.Fatal(err)
		}
		out = append(out, data...)
	}
	return append(out, f.Buf[at:]...)
}

func fillRandom(rng *rand.Rand, b []byte) {
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
}
