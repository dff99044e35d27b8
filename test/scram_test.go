//go:build e2e

package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClusterScramCredentials: credentials from `storage format
// --add-scram` on three controllers are in the log once, every broker
// describes the same credentials, and an alteration sent to any broker is
// forwarded to the active controller, also after it failed over.
func TestClusterScramCredentials(t *testing.T) {
	c := startClusterWith(t, 3, 2, false, []string{"--add-scram", "SCRAM-SHA-512=[name=admin,password=admin-secret,iterations=8192]"})
	cl := c.client()
	// describeOn asks one broker, which answers from its own image.
	describeOn := func(broker int32) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest().RequestWith(ctx, cl.Broker(int(broker)))
		if err != nil {
			return "", err
		}
		var parts []string
		for _, r := range resp.Results {
			for _, ci := range r.CredentialInfos {
				parts = append(parts, fmt.Sprintf("%s:%s/%d", r.User, kadm.ScramMechanism(ci.Mechanism), ci.Iterations))
			}
		}
		return strings.Join(parts, " "), nil
	}
	everyBroker := func(want string) {
		t.Helper()
		for _, b := range c.brokers {
			c.eventually(fmt.Sprintf("broker %d describes %q", b.id, want), 20*time.Second, func() error {
				got, err := describeOn(b.id)
				if err == nil && got != want {
					err = fmt.Errorf("got %q", got)
				}
				return err
			})
		}
	}
	everyBroker("admin:SCRAM-SHA-512/8192")

	alter := func(broker int32, del []kadm.DeleteSCRAM, upsert []kadm.UpsertSCRAM) {
		t.Helper()
		b, err := kgo.NewClient(kgo.SeedBrokers(c.brokers[broker-101].addr()))
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := kadm.NewClient(b).AlterUserSCRAMs(ctx, del, upsert)
		if err == nil {
			for _, r := range res {
				if r.Err != nil {
					err = fmt.Errorf("user %s: %w %s", r.User, r.Err, r.ErrMessage)
				}
			}
		}
		if err != nil {
			t.Fatalf("alter through broker %d: %v", broker, err)
		}
	}
	alter(101, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "alice-secret"}})
	everyBroker("admin:SCRAM-SHA-512/8192 alice:SCRAM-SHA-256/4096")

	c.killActiveController()
	alter(102, []kadm.DeleteSCRAM{{User: "admin", Mechanism: kadm.ScramSha512}}, nil)
	everyBroker("alice:SCRAM-SHA-256/4096")
}
