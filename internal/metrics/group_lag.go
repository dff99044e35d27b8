package metrics

import (
	"context"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// GroupLag is one committed partition of a consumer group: how far its
// committed offset is behind the partition's end.
type GroupLag struct {
	Group     string
	Topic     string
	Partition int32
	Lag       int64
}

// GroupLagSource lists the lag of the groups this broker coordinates (so
// that a cluster's brokers never report a group twice).
type GroupLagSource func(ctx context.Context) ([]GroupLag, error)

// groupLagScrapeTimeout bounds the lag lookup of one scrape.
const groupLagScrapeTimeout = 5 * time.Second

var (
	descGroupLag    = prometheus.NewDesc("kafka_consumergroup_lag", "Records a consumer group's committed offset is behind the partition's end, reported by the group's coordinator.", []string{"group", "topic", "partition"}, nil)
	descGroupLagSum = prometheus.NewDesc("kafka_consumergroup_lag_sum", "A consumer group's lag summed over its committed partitions, reported by the group's coordinator.", []string{"group"}, nil)
)

type groupLagCollector struct {
	source atomic.Pointer[GroupLagSource]
}

// SetGroupLag installs the source of the consumer group lag metrics.
func (r *Registry) SetGroupLag(src GroupLagSource) {
	if r != nil {
		r.lag.source.Store(&src)
	}
}

func (c *groupLagCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descGroupLag
	ch <- descGroupLagSum
}

func (c *groupLagCollector) Collect(ch chan<- prometheus.Metric) {
	src := c.source.Load()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), groupLagScrapeTimeout)
	defer cancel()
	lags, err := (*src)(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(descGroupLag, err)
		return
	}
	sums := map[string]int64{}
	for _, l := range lags {
		ch <- prometheus.MustNewConstMetric(descGroupLag, prometheus.GaugeValue, float64(l.Lag), l.Group, l.Topic, strconv.Itoa(int(l.Partition)))
		sums[l.Group] += l.Lag
	}
	for g, s := range sums {
		ch <- prometheus.MustNewConstMetric(descGroupLagSum, prometheus.GaugeValue, float64(s), g)
	}
}
