package controller

import (
	"bytes"
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/sasl"
	"gregor/internal/metadata"
)

func scramDeletion(user string, mechanism int8) kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
	d.Name, d.Mechanism = user, mechanism
	return d
}

func scramUpsertion(user string, mechanism int8, iterations int32) kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
	u := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	u.Name, u.Mechanism, u.Iterations = user, mechanism, iterations
	u.Salt, u.SaltedPassword = []byte("salt-"+user), []byte("salted-password-of-"+user)
	return u
}

func scramRequest(deletions []kmsg.AlterUserSCRAMCredentialsRequestDeletion, upsertions ...kmsg.AlterUserSCRAMCredentialsRequestUpsertion) *kmsg.AlterUserSCRAMCredentialsRequest {
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	req.Deletions, req.Upsertions = deletions, upsertions
	return req
}

func dels(d ...kmsg.AlterUserSCRAMCredentialsRequestDeletion) []kmsg.AlterUserSCRAMCredentialsRequestDeletion {
	return d
}

// scramImage is an image at metadata.version mv where alice and bob have a
// SCRAM-SHA-256 credential.
func scramImage(t *testing.T, mv int16) *metadata.Image {
	t.Helper()
	d := metadata.NewDelta(metadata.EmptyImage())
	recs := []metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: mv}}
	for _, user := range []string{"alice", "bob"} {
		recs = append(recs, &metadata.UserScramCredentialRecord{Name: user, Mechanism: 1, Salt: []byte("s"), StoredKey: []byte("k"), ServerKey: []byte("k"), Iterations: 4096})
	}
	if err := d.ReplayBatch(metadata.Batch{BaseOffset: 0, LastOffset: int64(len(recs) - 1), Records: recs}); err != nil {
		t.Fatal(err)
	}
	return d.Apply()
}

type scramResult struct {
	user string
	code int16
	msg  string
}

func TestAlterUserScramValidation(t *testing.T) {
	const sha256, sha512 = 1, 2
	none := dels()
	cases := []struct {
		name    string
		mv      int16
		req     *kmsg.AlterUserSCRAMCredentialsRequest
		want    []scramResult
		records []string // "+user/mechanism" upserted, "-user/mechanism" removed
	}{{
		name: "nothing",
		req:  scramRequest(none),
	}, {
		name:    "upsert a new user, replace one, delete one",
		req:     scramRequest(dels(scramDeletion("bob", sha256)), scramUpsertion("carol", sha512, 8192), scramUpsertion("alice", sha256, 16384)),
		want:    []scramResult{{"bob", 0, ""}, {"carol", 0, ""}, {"alice", 0, ""}},
		records: []string{"-bob/1", "+carol/2", "+alice/1"},
	}, {
		name: "the same user twice, even with two mechanisms, changes nothing of it",
		req: scramRequest(dels(scramDeletion("alice", sha256), scramDeletion("alice", sha256)),
			scramUpsertion("bob", sha256, 4096), scramUpsertion("bob", sha512, 4096), scramUpsertion("carol", sha256, 4096)),
		want: []scramResult{
			{"alice", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
			{"bob", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"},
			{"carol", 0, ""},
		},
		records: []string{"+carol/1"},
	}, {
		name: "a deletion and an upsertion of one user",
		req:  scramRequest(dels(scramDeletion("alice", sha256)), scramUpsertion("alice", sha512, 4096)),
		want: []scramResult{{"alice", kerr.DuplicateResource.Code, "A user credential cannot be altered twice in the same request"}},
	}, {
		name: "empty user: one result however often named",
		req:  scramRequest(dels(scramDeletion("", sha256), scramDeletion("", sha256)), scramUpsertion("", sha256, 4096)),
		want: []scramResult{{"", kerr.UnacceptableCredential.Code, "Username must not be empty"}},
	}, {
		name: "unknown mechanisms",
		req: scramRequest(dels(scramDeletion("alice", 0), scramDeletion("bob", 10)),
			scramUpsertion("carol", 0, 8192), scramUpsertion("dave", 3, 8192)),
		want: []scramResult{
			{"alice", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
			{"bob", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
			{"carol", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
			{"dave", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"},
		},
	}, {
		name: "an error on a user's first item answers its later ones",
		req:  scramRequest(dels(scramDeletion("alice", 0)), scramUpsertion("alice", sha256, 4096)),
		want: []scramResult{{"alice", kerr.UnsupportedSaslMechanism.Code, "Unknown SCRAM mechanism"}},
	}, {
		name: "iterations and salted password",
		req: scramRequest(none, scramUpsertion("a", sha256, 4095), scramUpsertion("b", sha512, 16385),
			func() kmsg.AlterUserSCRAMCredentialsRequestUpsertion {
				u := scramUpsertion("c", sha256, 4096)
				u.SaltedPassword = nil
				return u
			}(), scramUpsertion("d", sha512, 4096), scramUpsertion("e", sha256, 16384)),
		want: []scramResult{
			{"a", kerr.UnacceptableCredential.Code, "Too few iterations"},
			{"b", kerr.UnacceptableCredential.Code, "Too many iterations"},
			{"c", kerr.UnacceptableCredential.Code, "Salted password must not be empty"},
			{"d", 0, ""}, {"e", 0, ""},
		},
		records: []string{"+d/2", "+e/1"},
	}, {
		name: "deleting a credential that does not exist",
		req:  scramRequest(dels(scramDeletion("alice", sha512), scramDeletion("nobody", sha256))),
		want: []scramResult{
			{"alice", kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
			{"nobody", kerr.ResourceNotFound.Code, "Attempt to delete a user credential that does not exist"},
		},
	}, {
		name: "metadata.version below 3.5-IV2",
		mv:   metadata.MetadataVersionScram - 1,
		req:  scramRequest(dels(scramDeletion("alice", sha256)), scramUpsertion("carol", sha256, 4096), scramUpsertion("", 0, 1)),
		want: []scramResult{
			{"alice", kerr.UnsupportedVersion.Code, "The current metadata.version does not support SCRAM"},
			{"carol", kerr.UnsupportedVersion.Code, "The current metadata.version does not support SCRAM"},
			{"", kerr.UnsupportedVersion.Code, "The current metadata.version does not support SCRAM"},
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mv := c.mv
			if mv == 0 {
				mv = metadata.LatestMetadataVersion
			}
			records, resp := alterUserScram(scramImage(t, mv), c.req)
			var got []scramResult
			for _, r := range resp.Results {
				msg := ""
				if r.ErrorMessage != nil {
					msg = *r.ErrorMessage
				}
				got = append(got, scramResult{r.User, r.ErrorCode, msg})
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("results\n got %v\nwant %v", got, c.want)
			}
			var kinds []string
			for _, r := range records {
				switch r := r.(type) {
				case *metadata.UserScramCredentialRecord:
					kinds = append(kinds, fmt.Sprintf("+%s/%d", r.Name, r.Mechanism))
				case *metadata.RemoveUserScramCredentialRecord:
					kinds = append(kinds, fmt.Sprintf("-%s/%d", r.Name, r.Mechanism))
				default:
					t.Fatalf("unexpected record %T", r)
				}
			}
			if !reflect.DeepEqual(kinds, c.records) {
				t.Errorf("records\n got %v\nwant %v", kinds, c.records)
			}
		})
	}
}

// TestAlterUserScramDerivesKeys: the record holds StoredKey and ServerKey
// derived from the salted password, and not the salted password.
func TestAlterUserScramDerivesKeys(t *testing.T) {
	u := scramUpsertion("alice", 2, 8192)
	records, _ := alterUserScram(scramImage(t, metadata.LatestMetadataVersion), scramRequest(nil, u))
	r := records[0].(*metadata.UserScramCredentialRecord)
	mech, _ := sasl.ScramMechanismByName(sasl.ScramSHA512)
	want := mech.Credential(u.Salt, u.SaltedPassword, 8192)
	if !bytes.Equal(r.Salt, u.Salt) || !bytes.Equal(r.StoredKey, want.StoredKey) || !bytes.Equal(r.ServerKey, want.ServerKey) || r.Iterations != 8192 {
		t.Fatalf("record %+v", r)
	}
	for _, b := range [][]byte{r.Salt, r.StoredKey, r.ServerKey} {
		if bytes.Contains(b, u.SaltedPassword) {
			t.Fatal("the record holds the salted password")
		}
	}
}

// TestAlterUserScramCommits runs the request through a controller: the
// credentials reach the image only by replay, survive a restart, and a
// deletion removes them.
func TestAlterUserScramCommits(t *testing.T) {
	dir := metadataDir(t)
	n := startNode(t, dir, testConfig())
	alter := func(n *node, req *kmsg.AlterUserSCRAMCredentialsRequest) {
		t.Helper()
		for _, r := range n.c.AlterUserScramCredentials(context.Background(), req).Results {
			if r.ErrorCode != 0 {
				t.Fatalf("user %q: error %d", r.User, r.ErrorCode)
			}
		}
	}
	alter(n, scramRequest(nil, scramUpsertion("alice", 1, 4096), scramUpsertion("bob", 2, 8192)))
	if _, ok := n.c.Image().ScramCredential("SCRAM-SHA-256", "alice"); !ok {
		t.Fatal("alice's credential is not in the image")
	}
	n.stop()

	n = startNode(t, dir, testConfig())
	cred, ok := n.c.Image().ScramCredential("SCRAM-SHA-512", "bob")
	if !ok || cred.Iterations != 8192 {
		t.Fatalf("after a restart bob's credential = %+v, %t", cred, ok)
	}
	alter(n, scramRequest(dels(scramDeletion("bob", 2))))
	if _, ok := n.c.Image().Scram["bob"]; ok {
		t.Fatal("bob's credential survived its deletion")
	}
	resp := n.c.AlterUserScramCredentials(context.Background(), scramRequest(dels(scramDeletion("bob", 2))))
	if resp.Results[0].ErrorCode != kerr.ResourceNotFound.Code {
		t.Fatalf("second deletion: %+v", resp.Results)
	}
}

// TestBootstrapMetadata: Config.Bootstrap is what an empty log starts
// with, metadata.version first; a later start on that log does not write
// it again.
func TestBootstrapMetadata(t *testing.T) {
	dir := metadataDir(t)
	cfg := testConfig()
	mech, _ := sasl.ScramMechanismByName(sasl.ScramSHA256)
	cred := mech.Credential([]byte("salt"), []byte("salted"), 4096)
	cfg.Bootstrap = []metadata.Record{&metadata.UserScramCredentialRecord{Name: "admin", Mechanism: 1,
		Salt: cred.Salt, StoredKey: cred.StoredKey, ServerKey: cred.ServerKey, Iterations: cred.Iterations}}
	n := startNode(t, dir, cfg)
	img := n.c.Image()
	got, ok := img.ScramCredential("SCRAM-SHA-256", "admin")
	if !ok || !bytes.Equal(got.StoredKey, cred.StoredKey) || img.MetadataVersion() != metadata.LatestMetadataVersion {
		t.Fatalf("bootstrapped image: mv %d, admin %+v %t", img.MetadataVersion(), got, ok)
	}
	n.c.AlterUserScramCredentials(context.Background(), scramRequest(dels(scramDeletion("admin", 1))))
	n.stop()
	n = startNode(t, dir, cfg)
	if _, ok := n.c.Image().ScramCredential("SCRAM-SHA-256", "admin"); ok {
		t.Fatal("the bootstrap metadata was written again on a log that had it")
	}

	cfg.Bootstrap = append([]metadata.Record{&metadata.FeatureLevelRecord{Name: metadata.MetadataVersionFeature, FeatureLevel: 21}}, cfg.Bootstrap...)
	n = startNode(t, metadataDir(t), cfg)
	if mv := n.c.Image().MetadataVersion(); mv != 21 {
		t.Fatalf("metadata.version from the bootstrap = %d", mv)
	}
}
