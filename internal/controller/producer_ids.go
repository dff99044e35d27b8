package controller

import (
	"context"
	"fmt"
	"math"

	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/metadata"
)

// ProducerIDBlockSize is Kafka's ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE:
// how many producer ids a broker gets at a time.
const ProducerIDBlockSize = 1000

// ProducerIDsBlock is a range of producer ids handed to one broker.
type ProducerIDsBlock struct {
	BrokerID        int32
	FirstProducerID int64
	Size            int32
}

// AllocateProducerIDs hands the next block of producer ids to a broker
// (Kafka's AllocateProducerIds and ProducerIdControlManager.
// generateNextProducerId). The block is [NextProducerID, NextProducerID+1000)
// of the current image, and a ProducerIdsRecord moving NextProducerID past it
// is committed before the block is returned, so an id is never handed out
// twice, across controller restarts and failovers. A broker that is not
// registered with that epoch gets STALE_BROKER_EPOCH; exhausting int64 is
// UNKNOWN_SERVER_ERROR, as Kafka.
//
// The AllocateProducerIds wire API (key 67) comes with separate broker and
// controller processes; until then brokers call this method in process.
func (c *Controller) AllocateProducerIDs(ctx context.Context, brokerID int32, brokerEpoch int64) (ProducerIDsBlock, error) {
	type result struct {
		block ProducerIDsBlock
		err   error
	}
	r := write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, result) {
			block, rec, err := nextProducerIDs(img, brokerID, brokerEpoch)
			if err != nil {
				return nil, result{err: err}
			}
			return []metadata.Record{rec}, result{block: block}
		},
		func(e *kerr.Error) result { return result{err: e} })
	if r.err != nil {
		return ProducerIDsBlock{}, fmt.Errorf("allocate producer ids for broker %d: %w", brokerID, r.err)
	}
	return r.block, nil
}

// nextProducerIDs is the manager: the block for a broker and the record
// that commits it.
func nextProducerIDs(img *metadata.Image, brokerID int32, brokerEpoch int64) (ProducerIDsBlock, *metadata.ProducerIdsRecord, error) {
	reg, ok := img.Brokers[brokerID]
	if !ok {
		return ProducerIDsBlock{}, nil, fmt.Errorf("%w: no broker registration found for broker %d", kerr.StaleBrokerEpoch, brokerID)
	}
	if reg.Epoch != brokerEpoch {
		return ProducerIDsBlock{}, nil, fmt.Errorf("%w: expected broker epoch %d, but got %d", kerr.StaleBrokerEpoch, reg.Epoch, brokerEpoch)
	}
	first := img.NextProducerID
	if first > math.MaxInt64-ProducerIDBlockSize {
		return ProducerIDsBlock{}, nil, fmt.Errorf("%w: exhausted all producer ids", kerr.UnknownServerError)
	}
	rec := &metadata.ProducerIdsRecord{BrokerID: brokerID, BrokerEpoch: brokerEpoch, NextProducerID: first + ProducerIDBlockSize}
	return ProducerIDsBlock{BrokerID: brokerID, FirstProducerID: first, Size: ProducerIDBlockSize}, rec, nil
}
