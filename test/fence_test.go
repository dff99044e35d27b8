//go:build e2e

package test

import (
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestClusterFenceOnConnectionClose: with a long session timeout, a broker
// that is merely stopped (SIGSTOP: its sockets stay open) keeps its
// leaderships, while a broker killed with kill -9 is fenced by the active
// controller because its heartbeat connection closed, not by the session
// timeout; it comes back when restarted.
func TestClusterFenceOnConnectionClose(t *testing.T) {
	const session = 20 * time.Second
	c := startCluster(t, 3, 3, fmt.Sprintf("broker.session.timeout.ms=%d", session.Milliseconds()))
	c.createTopic("fence", 6)
	other := c.brokers[2].addr()
	leads := func(id int32) (bool, error) {
		leaders, err := c.partitionLeaders(other, "fence")
		if err != nil {
			return false, err
		}
		for _, l := range leaders {
			if l == id {
				return true, nil
			}
		}
		return false, nil
	}
	c.eventually("every broker leads a partition", 30*time.Second, func() error {
		for _, b := range c.brokers {
			if ok, err := leads(b.id); err != nil || !ok {
				return fmt.Errorf("broker %d leads nothing (%v)", b.id, err)
			}
		}
		return nil
	})

	// Stopped, not dead: no close, so no fencing before the session
	// timeout. The check comes well before it could expire.
	paused := c.brokers[0]
	stoppedAt := time.Now()
	if err := paused.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	ok, err := leads(paused.id)
	if waited := time.Since(stoppedAt); waited < session/2 {
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			t.Fatalf("broker %d was fenced %v after SIGSTOP, before its session timeout (%v)\n%s", paused.id, waited, session, c.logs())
		}
	}
	if err := paused.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}

	// Killed: its kernel closes the heartbeat connection and the
	// controller fences it for that.
	const phrase = "fencing broker because it closed the connection of its heartbeats"
	count := func() (n int) {
		for _, ctl := range c.controllers {
			n += ctl.logCount(phrase)
		}
		return n
	}
	before := count()
	victim := c.brokers[1]
	victim.kill9()
	c.eventually("the killed broker is fenced for its closed connection", session/2, func() error {
		if count() == before {
			return fmt.Errorf("no controller logged %q", phrase)
		}
		if ok, err := leads(victim.id); err != nil || ok {
			return fmt.Errorf("broker %d still leads (%v)", victim.id, err)
		}
		return nil
	})
	victim.start()
	c.waitBrokers(3)
	cl := c.client(kgo.DefaultProduceTopic("fence"))
	produceSome(t, cl, "fence", 30)
	c.consumeCount("fence", 30)
}

// TestClusterCombinedFenceAfterControllerKill: three combined nodes with a
// long session timeout; kill -9 of the node that is the active controller
// and a broker. Its broker half heartbeated to its own controller in
// process, so no heartbeat connection closes anywhere: the new active
// controller finds its listeners refusing connections and fences it, long
// before the session timeout. It comes back when restarted.
func TestClusterCombinedFenceAfterControllerKill(t *testing.T) {
	const session = 60 * time.Second
	c := startCombined(t, false, fmt.Sprintf("broker.session.timeout.ms=%d", session.Milliseconds()))
	c.createTopic("combined-fence", 6)
	var leader int32
	c.eventually("quorum leader", 20*time.Second, func() (err error) {
		leader, err = c.quorumLeader()
		return err
	})
	victim := c.controller(leader)
	var other string
	for _, b := range c.brokers {
		if b.id != victim.id {
			other = b.addr()
		}
	}
	leads := func() (bool, error) {
		leaders, err := c.partitionLeaders(other, "combined-fence")
		if err != nil {
			return false, err
		}
		for _, l := range leaders {
			if l == victim.id {
				return true, nil
			}
		}
		return false, nil
	}
	c.eventually("the active controller's node leads a partition", 30*time.Second, func() error {
		if ok, err := leads(); err != nil || !ok {
			return fmt.Errorf("node %d leads nothing (%v)", victim.id, err)
		}
		return nil
	})
	const phrase = "fencing broker because its listeners refuse connections"
	killedAt := time.Now()
	victim.kill9()
	c.eventually("the killed node fenced by the new controller", session/2, func() error {
		n := 0
		for _, ctl := range c.controllers {
			if ctl != victim {
				n += ctl.logCount(phrase)
			}
		}
		if n == 0 {
			return fmt.Errorf("no controller logged %q", phrase)
		}
		if ok, err := leads(); err != nil || ok {
			return fmt.Errorf("node %d still leads (%v)", victim.id, err)
		}
		return nil
	})
	t.Logf("node %d fenced %v after kill -9 (session timeout %v)", victim.id, time.Since(killedAt).Round(time.Millisecond), session)
	victim.start()
	c.waitBrokers(3)
	cl := c.client(kgo.DefaultProduceTopic("combined-fence"))
	produceSome(t, cl, "combined-fence", 30)
	c.consumeCount("combined-fence", 30)
}
