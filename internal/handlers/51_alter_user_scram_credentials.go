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
// Authorization: Kafka requires ALTER on CLUSTER and otherwise answers
// every user with CLUSTER_AUTHORIZATION_FAILED. Gregor has no authorizer
// yet; the check belongs at the top of alterUserScramCredentials, before
// the request is forwarded.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var alterUserScramCredentialsAPI = api{key: 51, min: 0, max: 0, handle: (*Handlers).alterUserScramCredentials}

func (h *Handlers) alterUserScramCredentials(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	return h.d.Controller.AlterUserScramCredentials(ctx, req.Body.(*kmsg.AlterUserSCRAMCredentialsRequest)), nil
}
