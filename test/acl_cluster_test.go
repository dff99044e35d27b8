//go:build e2e

package test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// The SCRAM users of TestClusterACLsSurvive, besides the secure cluster's
// own: bob has ACLs, mallory none until the new controller gives her some.
const (
	aclBobPass     = "bob-cluster-secret"
	aclMalloryPass = "mallory-cluster-secret"
)

// aclCluster is a secure cluster (SASL_SSL everywhere) with the
// StandardAuthorizer on every node. The nodes' own principals
// (User:controller, User:broker) and the tests' admin (User:alice, the
// secure cluster's client) are super users.
type aclCluster struct {
	*cluster
	admin *kadm.Client
}

func startACLCluster(t *testing.T) *aclCluster {
	t.Helper()
	c := startClusterSpec(t, clusterSpec{controllers: 3, brokers: 3, secure: true,
		formatArgs: []string{
			"--add-scram", "SCRAM-SHA-512=[name=bob,password=" + aclBobPass + "]",
			"--add-scram", "SCRAM-SHA-512=[name=mallory,password=" + aclMalloryPass + "]",
		},
		extra: []string{
			"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
			"super.users=User:" + secureControllerUser + ";User:" + secureBrokerUser + ";User:" + secureClientUser,
		},
	})
	return &aclCluster{cluster: c, admin: kadm.NewClient(c.client())}
}

// userOpts connect as a SCRAM user of the cluster.
func (c *aclCluster) userOpts(user, pass string) []kgo.Opt {
	return []kgo.Opt{kgo.DialTLSConfig(c.sec.clientTLS), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha512Mechanism())}
}

// ask sends req to the one broker at addr, as the user of opts.
func ask[R kmsg.Response](addr string, req kmsg.Request, opts []kgo.Opt) (R, error) {
	var zero R
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.RequestRetries(0)}, opts...)...)
	if err != nil {
		return zero, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cl.SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return zero, err
	}
	return resp.(R), nil
}

// decisions is how the broker at addr answers each user's Metadata for
// each topic: "user/topic=OK" or the error's name, in a fixed order.
func (c *aclCluster) decisions(addr string, asked map[string][]string) (string, error) {
	pass := map[string]string{"bob": aclBobPass, "mallory": aclMalloryPass}
	var out []string
	for _, user := range []string{"bob", "mallory"} {
		req := kmsg.NewPtrMetadataRequest()
		for _, topic := range asked[user] {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
		resp, err := ask[*kmsg.MetadataResponse](addr, req, c.userOpts(user, pass[user]))
		if err != nil {
			return "", fmt.Errorf("metadata as %s: %w", user, err)
		}
		for _, rt := range resp.Topics {
			d := "OK"
			if rt.ErrorCode != 0 {
				d = kerr.ErrorForCode(rt.ErrorCode).(*kerr.Error).Message
			}
			out = append(out, fmt.Sprintf("%s/%s=%s", user, *rt.Topic, d))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " "), nil
}

// describedACLs lists every ACL as the broker at addr answers
// DescribeAcls, sorted.
func (c *aclCluster) describedACLs(addr string) (string, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	resp, err := ask[*kmsg.DescribeACLsResponse](addr, req, c.clientSecurity())
	if err != nil {
		return "", err
	}
	if resp.ErrorCode != 0 {
		return "", kerr.ErrorForCode(resp.ErrorCode)
	}
	var acls []string
	for _, r := range resp.Resources {
		for _, a := range r.ACLs {
			acls = append(acls, fmt.Sprintf("%s:%s:%s %s %s %s", r.ResourceType, r.ResourcePatternType, r.ResourceName,
				a.Principal, a.Operation, a.PermissionType))
		}
	}
	slices.Sort(acls)
	return strings.Join(acls, "; "), nil
}

// everyBroker waits until every running broker lists the ACLs acls and
// decides the Metadata of asked as want.
func (c *aclCluster) everyBroker(what string, acls []string, asked map[string][]string, want string) {
	c.t.Helper()
	slices.Sort(acls)
	wantACLs := strings.Join(acls, "; ")
	c.eventually(what, 30*time.Second, func() error {
		for _, b := range c.brokers {
			if b.cmd == nil {
				continue
			}
			got, err := c.describedACLs(b.addr())
			if err != nil {
				return fmt.Errorf("broker %d: DescribeAcls: %w", b.id, err)
			}
			if got != wantACLs {
				return fmt.Errorf("broker %d lists ACLs %s, want %s", b.id, got, wantACLs)
			}
			if got, err = c.decisions(b.addr(), asked); err != nil {
				return fmt.Errorf("broker %d: %w", b.id, err)
			} else if got != want {
				return fmt.Errorf("broker %d decides %s, want %s", b.id, got, want)
			}
		}
		return nil
	})
}

// createACLs creates the ACLs of b through the brokers (which forward to
// the active controller), retrying while the quorum has no leader.
func (c *aclCluster) createACLs(b *kadm.ACLBuilder) {
	c.t.Helper()
	c.eventually("create ACLs", 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.admin.CreateACLs(ctx, b)
		for _, r := range res {
			if err == nil {
				err = r.Err
			}
		}
		return err
	})
}

// produceAs writes one record to topic as a user and returns the error.
func (c *aclCluster) produceAs(user, pass, topic string) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(c.bootstrap()...), kgo.RequestRetries(2)}, c.userOpts(user, pass)...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(user)}).FirstErr()
}

// TestClusterACLsSurvive: on 3 controllers and 3 brokers with the
// StandardAuthorizer, ACLs (literal, prefixed, a DENY) made through the
// brokers are listed by DescribeAcls and enforced by every broker. kill -9
// of the active controller loses none: once another leads, every broker
// still lists and enforces them, and a new ACL created through the new
// controller takes effect on every broker. After every node stops and
// starts again, all of them, the new one too, still hold.
func TestClusterACLsSurvive(t *testing.T) {
	c := startACLCluster(t)
	adm := c.admin
	ctx := ctxT(t, 5*time.Minute)
	for _, topic := range []string{"guarded", "b-open", "b-hidden"} {
		if _, err := adm.CreateTopic(ctx, 1, 3, nil, topic); err != nil {
			t.Fatal(err)
		}
	}
	lit, pre := kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed
	c.createACLs(kadm.NewACLs().Topics("guarded").Allow("User:bob").AllowHosts().
		Operations(kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate).ResourcePatternType(lit))
	c.createACLs(kadm.NewACLs().Topics("b-").Allow("User:bob").AllowHosts().Operations(kadm.OpAll).ResourcePatternType(pre))
	c.createACLs(kadm.NewACLs().Topics("b-hidden").Deny("User:bob").DenyHosts().Operations(kadm.OpDescribe).ResourcePatternType(lit))
	acls := []string{
		"TOPIC:LITERAL:guarded User:bob WRITE ALLOW",
		"TOPIC:LITERAL:guarded User:bob DESCRIBE ALLOW",
		"TOPIC:LITERAL:guarded User:bob CREATE ALLOW",
		"TOPIC:PREFIXED:b- User:bob ALL ALLOW",
		"TOPIC:LITERAL:b-hidden User:bob DESCRIBE DENY",
	}
	asked := map[string][]string{"bob": {"guarded", "b-open", "b-hidden"}, "mallory": {"guarded"}}
	const before = "bob/b-hidden=TOPIC_AUTHORIZATION_FAILED bob/b-open=OK bob/guarded=OK mallory/guarded=TOPIC_AUTHORIZATION_FAILED"
	c.everyBroker("the ACLs on every broker", acls, asked, before)
	if err := c.produceAs("bob", aclBobPass, "guarded"); err != nil {
		t.Fatalf("bob produces to guarded: %v", err)
	}
	if err := c.produceAs("mallory", aclMalloryPass, "guarded"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("mallory produces to guarded: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}

	c.failOverController(30 * time.Second)
	c.everyBroker("the ACLs on every broker after the failover", acls, asked, before)

	// A new ACL, through the new controller.
	c.createACLs(kadm.NewACLs().Topics("guarded").Allow("User:mallory").AllowHosts().
		Operations(kadm.OpWrite, kadm.OpDescribe).ResourcePatternType(lit))
	acls = append(acls, "TOPIC:LITERAL:guarded User:mallory WRITE ALLOW", "TOPIC:LITERAL:guarded User:mallory DESCRIBE ALLOW")
	const after = "bob/b-hidden=TOPIC_AUTHORIZATION_FAILED bob/b-open=OK bob/guarded=OK mallory/guarded=OK"
	c.everyBroker("the new ACL on every broker", acls, asked, after)
	if err := c.produceAs("mallory", aclMalloryPass, "guarded"); err != nil {
		t.Fatalf("mallory produces to guarded with her new ACL: %v", err)
	}

	// Every node stops and starts again, the killed controller too.
	c.restartAll()
	c.everyBroker("the ACLs on every broker after a full restart", acls, asked, after)
	for _, user := range []struct{ name, pass string }{{"bob", aclBobPass}, {"mallory", aclMalloryPass}} {
		if err := c.produceAs(user.name, user.pass, "guarded"); err != nil {
			t.Fatalf("%s produces to guarded after the restart: %v", user.name, err)
		}
	}
}
