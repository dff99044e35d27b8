//go:build e2e

package test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestSingleNodeGainsABroker: the zero-config node runs the metadata quorum
// as a voter like any controller, so a broker-only node that names it in
// controller.quorum.voters follows its metadata log, registers, and
// replicates its partitions. (The former one-voter implementation served
// no metadata fetches: such a broker never caught up.)
func TestSingleNodeGainsABroker(t *testing.T) {
	single := startBroker(t)
	props, err := os.ReadFile(filepath.Join(single.dataDir, "meta.properties"))
	if err != nil {
		t.Fatal(err)
	}
	var clusterID string
	for _, line := range strings.Split(string(props), "\n") {
		if v, ok := strings.CutPrefix(line, "cluster.id="); ok {
			clusterID = v
		}
	}
	c := &cluster{t: t, clusterID: clusterID, voters: fmt.Sprintf("1@127.0.0.1:%d", single.ctrlPort)}
	b2 := &node{t: t, id: 2, roles: "broker", dataDir: t.TempDir(), port: freePort(t)}
	c.configure(b2)
	c.format(b2)
	t.Cleanup(b2.stop)
	b2.start()

	cl := newKgo(t, single, kgo.SeedBrokers(single.addr(), b2.addr()))
	adm := kadm.NewClient(cl)
	c.eventually("two brokers", 30*time.Second, func() error {
		m, err := adm.Metadata(ctxT(t, 5*time.Second))
		if err != nil {
			return err
		}
		if ids := m.Brokers.NodeIDs(); !slices.Equal(ids, []int32{1, 2}) {
			return fmt.Errorf("brokers %v", ids)
		}
		return nil
	})
	resp, err := adm.CreateTopics(ctxT(t, 10*time.Second), 4, 2, nil, "grown")
	if err != nil || resp["grown"].Err != nil {
		t.Fatalf("create a topic of replication factor 2: %v %v", err, resp["grown"].Err)
	}
	produceSome(t, cl, "grown", 200)
	// Both replicas of every partition catch up: the broker follows
	// partitions the single node leads, and the other way round.
	c.eventually("every partition's ISR to hold both brokers", 30*time.Second, func() error {
		td, err := adm.ListTopics(ctxT(t, 5*time.Second), "grown")
		if err != nil {
			return err
		}
		for _, p := range td["grown"].Partitions.Sorted() {
			if isr := slices.Sorted(slices.Values(p.ISR)); !slices.Equal(isr, []int32{1, 2}) {
				return fmt.Errorf("partition %d ISR %v", p.Partition, isr)
			}
		}
		return nil
	})
	consumeCount(t, []string{b2.addr()}, "grown", 200)
}
