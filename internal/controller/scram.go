package controller

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth/sasl"
	"gregor/internal/metadata"
)

// AlterUserScramCredentials deletes and upserts users' SCRAM credentials
// (Kafka's ScramControlManager.alterCredentials). The client sends each
// upsertion's salt and salted password; the controller derives StoredKey
// and ServerKey from the salted password and writes only those, in a
// UserScramCredentialRecord. All the request's records are one batch.
//
// Each user gets one result. A user named more than once in the request,
// across deletions and upsertions and whatever the mechanisms, is
// DUPLICATE_RESOURCE and nothing of it changes. Then, per item: below
// metadata.version 3.5-IV2, UNSUPPORTED_VERSION; an empty user,
// UNACCEPTABLE_CREDENTIAL; a mechanism other than SCRAM-SHA-256/512,
// UNSUPPORTED_SASL_MECHANISM; deleting a credential that does not exist,
// RESOURCE_NOT_FOUND; iterations outside 4096-16384 or an empty salted
// password, UNACCEPTABLE_CREDENTIAL (Kafka fails the last with
// UNKNOWN_SERVER_ERROR, its HMAC refusing an empty key).
func (c *Controller) AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	return write(c, ctx, false,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.AlterUserSCRAMCredentialsResponse) {
			return alterUserScram(img, req)
		},
		func(e *kerr.Error) *kmsg.AlterUserSCRAMCredentialsResponse {
			resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
			for _, user := range scramUsers(req) {
				r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				r.User, r.ErrorCode = user, e.Code
				resp.Results = append(resp.Results, r)
			}
			return resp
		})
}

// scramUsers returns the users a request names, in order of first mention
// (deletions first): the order of the results.
func scramUsers(req *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var users []string
	for _, d := range req.Deletions {
		if !slices.Contains(users, d.Name) {
			users = append(users, d.Name)
		}
	}
	for _, u := range req.Upsertions {
		if !slices.Contains(users, u.Name) {
			users = append(users, u.Name)
		}
	}
	return users
}

// alterUserScram is the manager: the records and the response for a
// request against img.
func alterUserScram(img *metadata.Image, req *kmsg.AlterUserSCRAMCredentialsRequest) ([]metadata.Record, *kmsg.AlterUserSCRAMCredentialsResponse) {
	supported := img.MetadataVersion() >= metadata.MetadataVersionScram
	failed := map[string]apiError{}
	deletions := map[string]*kmsg.AlterUserSCRAMCredentialsRequestDeletion{}
	upsertions := map[string]*kmsg.AlterUserSCRAMCredentialsRequestUpsertion{}
	duplicate := errWith(kerr.DuplicateResource, "A user credential cannot be altered twice in the same request")
	tooOld := errWith(kerr.UnsupportedVersion, "The current metadata.version does not support SCRAM")

	for i := range req.Deletions {
		d := &req.Deletions[i]
		if _, ok := failed[d.Name]; ok {
			continue
		}
		if _, ok := deletions[d.Name]; ok {
			delete(deletions, d.Name)
			failed[d.Name] = duplicate
			continue
		}
		e := tooOld
		if supported {
			e = validateScramDeletion(img, d)
		}
		if e.err != nil {
			failed[d.Name] = e
			continue
		}
		deletions[d.Name] = d
	}
	for i := range req.Upsertions {
		u := &req.Upsertions[i]
		if _, ok := failed[u.Name]; ok {
			continue
		}
		_, deleting := deletions[u.Name]
		_, upserting := upsertions[u.Name]
		if deleting || upserting {
			delete(deletions, u.Name)
			delete(upsertions, u.Name)
			failed[u.Name] = duplicate
			continue
		}
		e := tooOld
		if supported {
			e = validateScramUpsertion(u)
		}
		if e.err != nil {
			failed[u.Name] = e
			continue
		}
		upsertions[u.Name] = u
	}

	// Records in request order, deletions first, so the batch is the same
	// for the same request.
	var records []metadata.Record
	for i := range req.Deletions {
		if d := &req.Deletions[i]; deletions[d.Name] == d {
			records = append(records, &metadata.RemoveUserScramCredentialRecord{Name: d.Name, Mechanism: d.Mechanism})
		}
	}
	for i := range req.Upsertions {
		u := &req.Upsertions[i]
		if upsertions[u.Name] != u {
			continue
		}
		mech, _ := sasl.ScramMechanismByType(u.Mechanism) // validated
		records = append(records, metadata.NewUserScramCredentialRecord(u.Name, u.Mechanism, mech.Credential(u.Salt, u.SaltedPassword, int(u.Iterations))))
	}

	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	for _, user := range scramUsers(req) {
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User = user
		if e, ok := failed[user]; ok {
			r.ErrorCode, r.ErrorMessage = e.code(), e.message
		}
		resp.Results = append(resp.Results, r)
	}
	return records, resp
}

// validateScramUser checks what deletions and upsertions share.
func validateScramUser(user string, mechanism int8) apiError {
	if user == "" {
		return errWith(kerr.UnacceptableCredential, "Username must not be empty")
	}
	if _, ok := sasl.ScramMechanismByType(mechanism); !ok {
		return errWith(kerr.UnsupportedSaslMechanism, "Unknown SCRAM mechanism")
	}
	return apiError{}
}

func validateScramDeletion(img *metadata.Image, d *kmsg.AlterUserSCRAMCredentialsRequestDeletion) apiError {
	if e := validateScramUser(d.Name, d.Mechanism); e.err != nil {
		return e
	}
	if _, ok := img.Scram[d.Name][d.Mechanism]; !ok {
		return errWith(kerr.ResourceNotFound, "Attempt to delete a user credential that does not exist")
	}
	return apiError{}
}

func validateScramUpsertion(u *kmsg.AlterUserSCRAMCredentialsRequestUpsertion) apiError {
	if e := validateScramUser(u.Name, u.Mechanism); e.err != nil {
		return e
	}
	switch {
	case u.Iterations < sasl.ScramMinIterations:
		return errWith(kerr.UnacceptableCredential, "Too few iterations")
	case u.Iterations > sasl.ScramMaxIterations:
		return errWith(kerr.UnacceptableCredential, "Too many iterations")
	case len(u.SaltedPassword) == 0:
		return errWith(kerr.UnacceptableCredential, "Salted password must not be empty")
	}
	return apiError{}
}
