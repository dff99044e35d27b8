package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// withAuthorizer turns on the StandardAuthorizer with the PLAINTEXT
// listener's User:ANONYMOUS as a super user (the tests' admin), as Kafka's
// docs do for a cluster whose brokers talk PLAINTEXT.
var withAuthorizer = map[string]string{
	"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
	"super.users":           "User:ANONYMOUS",
}

// Without an authorizer the ACL APIs answer SECURITY_DISABLED, as Kafka.
func TestACLsWithoutAuthorizer(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	res, err := ts.admin().DescribeACLs(ctxT(t), kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
		ResourcePatternType(kadm.ACLPatternAny).Operations(kadm.OpAny))
	for _, r := range res {
		if err == nil {
			err = r.Err
		}
	}
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %v, want SECURITY_DISABLED", err)
	}
}

// TestACLs creates, describes, restarts with, and deletes ACLs through an
// admin client, as kafka-acls does.
func TestACLs(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, withAuthorizer)
	ctx := ctxT(t)
	adm := ts.admin()

	created, err := adm.CreateACLs(ctx, kadm.NewACLs().
		Topics("orders").Groups("billing").
		Allow("User:alice").AllowHosts().
		Operations(kadm.OpRead, kadm.OpDescribe).
		ResourcePatternType(kadm.ACLPatternLiteral))
	if err != nil {
		t.Fatal(err)
	}
	prefixed, err := adm.CreateACLs(ctx, kadm.NewACLs().
		Topics("app-").Deny("User:*").DenyHosts("10.0.0.6").
		Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternPrefixed))
	if err != nil {
		t.Fatal(err)
	}
	bad, err := adm.CreateACLs(ctx, kadm.NewACLs().Topics("t").Allow("alice").AllowHosts().Operations(kadm.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range append(created, prefixed...) {
		if r.Err != nil {
			t.Fatalf("create %s %s: %v %s", r.Name, r.Operation, r.Err, r.ErrMessage)
		}
	}
	if len(bad) != 1 || bad[0].Err != kerr.InvalidRequest || !strings.Contains(bad[0].ErrMessage, "Type:name") {
		t.Fatalf("principal without a type: %+v", bad)
	}

	// The broker answers from its image, which follows the controller's.
	check := func(adm *kadm.Client, want string) {
		t.Helper()
		var got string
		waitFor(t, "described ACLs "+want, 10*time.Second, func() bool {
			described, err := adm.DescribeACLs(ctx, kadm.NewACLs().AnyResource().Allow().Deny().AllowHosts().DenyHosts().
				Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternAny))
			if err != nil {
				t.Fatal(err)
			}
			var acls []string
			for _, r := range described {
				if r.Err != nil {
					t.Fatalf("describe: %v", r.Err)
				}
				for _, d := range r.Described {
					acls = append(acls, fmt.Sprintf("%s:%s:%s %s@%s %s %s", d.Type, d.Pattern, d.Name, d.Principal, d.Host, d.Operation, d.Permission))
				}
			}
			slices.Sort(acls)
			got = strings.Join(acls, "; ")
			return got == want
		})
	}
	all := "GROUP:LITERAL:billing User:alice@* DESCRIBE ALLOW; GROUP:LITERAL:billing User:alice@* READ ALLOW; " +
		"TOPIC:LITERAL:orders User:alice@* DESCRIBE ALLOW; TOPIC:LITERAL:orders User:alice@* READ ALLOW; " +
		"TOPIC:PREFIXED:app- User:*@10.0.0.6 WRITE DENY"
	check(adm, all)

	ts.stop()
	ts = startServer(t, dir, withAuthorizer)
	adm = ts.admin()
	check(adm, all)

	deleted, err := adm.DeleteACLs(ctx, kadm.NewACLs().Topics("orders").Allow("User:alice").AllowHosts().
		Operations(kadm.OpAny).ResourcePatternType(kadm.ACLPatternMatch))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range deleted {
		if r.Err != nil {
			t.Fatalf("delete: %v", r.Err)
		}
		for _, d := range r.Deleted {
			names = append(names, fmt.Sprintf("%s:%s %s", d.Pattern, d.Name, d.Operation))
		}
	}
	slices.Sort(names)
	if strings.Join(names, ", ") != "LITERAL:orders DESCRIBE, LITERAL:orders READ" {
		t.Fatalf("deleted %v", names)
	}
	check(adm, "GROUP:LITERAL:billing User:alice@* DESCRIBE ALLOW; GROUP:LITERAL:billing User:alice@* READ ALLOW; "+
		"TOPIC:PREFIXED:app- User:*@10.0.0.6 WRITE DENY")
}
