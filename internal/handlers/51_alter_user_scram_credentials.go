package handlers

// AlterUserScramCredentials (key 51), v0. Upsertions carry a salt and a
// salted password the client computed (never the password); the active
// controller validates them, derives the keys and commits
// UserScramCredentialRecords / RemoveUserScramCredentialRecords (see
// controller.AlterUserScramCredentials for the per-user error codes).
// Brokers forward the request; a controller listener answers it itself.
// A forward that fails answers every user named with the error
// (NOT_CONTROLLER, or REQUEST_TIMED_OUT when the wait ran out).
//
// Authorization: ALTER on CLUSTER, checked before the request is
// forwarded; otherwise every user is answered CLUSTER_AUTHORIZATION_FAILED,
// as Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterUserScramCredentialsAPI = api{key: 51, min: 0, max: 0, handle: (*Handlers).alterUserScramCredentials}

func scramUsers(r *kmsg.AlterUserSCRAMCredentialsRequest) []string {
	var names []string
	for _, d := range r.Deletions {
		names = append(names, d.Name)
	}
	for _, u := range r.Upsertions {
		names = append(names, u.Name)
	}
	return names
}

func (h *Handlers) alterUserScramCredentials(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	if r := req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest); !h.authorizedClusterAdmin(ctx, req, kmsg.ACLOperationAlter) {
		// Every user named, as the forwarding failure answers.
		resp := r.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
		seen := map[string]bool{}
		for _, n := range scramUsers(r) {
			if !seen[n] {
				seen[n] = true
				res := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
				res.User, res.ErrorCode = n, kerr.ClusterAuthorizationFailed.Code
				resp.Results = append(resp.Results, res)
			}
		}
		return resp, nil
	}
	return h.d.Controller.AlterUserScramCredentials(ctx, req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)), nil
}
