package server

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/sasl"
)

// TestScramCredentials sets, describes, restarts with, and deletes SCRAM
// credentials through an admin client, as kafka-configs --entity-type users
// does.
func TestScramCredentials(t *testing.T) {
	dir := t.TempDir()
	ts := startServer(t, dir, nil)
	ctx := ctxT(t)

	versions, err := ts.admin().ApiVersions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	versions.Each(func(v kadm.BrokerApiVersions) {
		for _, key := range []int16{50, 51} {
			if lo, hi, ok := v.KeyVersions(key); !ok || lo != 0 || hi != 0 {
				t.Errorf("ApiVersions: key %d = %d-%d, %t", key, lo, hi, ok)
			}
		}
	})

	adm := ts.admin()
	altered, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "alice", Mechanism: kadm.ScramSha256, Iterations: 8192, Password: "alice-secret"},
		{User: "bob", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "bob-secret"},
		{User: "eve", Mechanism: kadm.ScramSha256, Iterations: 100, Salt: []byte("salt"), SaltedPassword: []byte("salted")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if altered["alice"].Err != nil || altered["bob"].Err != nil || altered["eve"].Err != kerr.UnacceptableCredential {
		t.Fatalf("altered %+v", altered)
	}
	// The broker answers from its image, which follows the controller's
	// (in a multi-node cluster, eventually: Kafka's tests wait too).
	check := func(adm *kadm.Client, want string) {
		t.Helper()
		var got string
		waitFor(t, "described credentials "+want, 10*time.Second, func() bool {
			described, err := adm.DescribeUserSCRAMs(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got = ""
			for _, d := range described.Sorted() {
				if d.Err != nil {
					t.Fatalf("describe %s: %v", d.User, d.Err)
				}
				got += d.User + ":"
				for _, c := range d.CredInfos {
					got += fmt.Sprintf(" %s/%d", c.Mechanism, c.Iterations)
				}
				got += ";"
			}
			return got == want
		})
	}
	check(adm, "alice: SCRAM-SHA-256/8192;bob: SCRAM-SHA-512/4096;")
	// What the broker would authenticate alice with: keys from her password.
	cred, ok := ts.srv.loader.Image().ScramCredential("SCRAM-SHA-256", "alice")
	want, err := sasl.NewScramCredential(sasl.ScramSHA256, "alice-secret", cred.Salt, 8192)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || cred.Iterations != 8192 || !bytes.Equal(cred.StoredKey, want.StoredKey) || !bytes.Equal(cred.ServerKey, want.ServerKey) {
		t.Fatalf("alice's credential in the broker's image does not match her password: %t", ok)
	}
	if _, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: "alice", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "other"}}); err != nil {
		t.Fatal(err)
	}

	// Named users: unknown ones are RESOURCE_NOT_FOUND, one named twice
	// DUPLICATE_RESOURCE.
	req := kmsg.NewPtrDescribeUserSCRAMCredentialsRequest()
	for _, u := range []string{"alice", "nobody", "bob", "bob"} {
		ru := kmsg.NewDescribeUserSCRAMCredentialsRequestUser()
		ru.Name = u
		req.Users = append(req.Users, ru)
	}
	resp, err := req.RequestWith(ctx, ts.client())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Results) != 3 || resp.Results[0].User != "alice" || len(resp.Results[0].CredentialInfos) != 2 ||
		resp.Results[1].ErrorCode != kerr.ResourceNotFound.Code || resp.Results[2].ErrorCode != kerr.DuplicateResource.Code {
		t.Fatalf("describe named users: %+v", resp.Results)
	}

	ts.stop()
	ts = startServer(t, dir, nil)
	adm = ts.admin()
	check(adm, "alice: SCRAM-SHA-256/8192 SCRAM-SHA-512/4096;bob: SCRAM-SHA-512/4096;")

	deleted, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "alice", Mechanism: kadm.ScramSha256}, {User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if deleted["alice"].Err != nil || deleted["bob"].Err != kerr.ResourceNotFound {
		t.Fatalf("deleted %+v", deleted)
	}
	check(adm, "alice: SCRAM-SHA-512/4096;bob: SCRAM-SHA-512/4096;")
}
