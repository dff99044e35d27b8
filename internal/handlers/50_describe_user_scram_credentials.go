package handlers

// DescribeUserScramCredentials (key 50), v0. Answered from this listener's
// metadata image (a broker's; a controller's on a controller listener), as
// Kafka's ScramImage.describe: no users (null or empty) means every user
// with a credential, sorted; named users are answered once each in the
// order asked, with their mechanisms and iterations (never salts or keys),
// RESOURCE_NOT_FOUND for a user without credentials, DUPLICATE_RESOURCE for
// a user named more than once.
//
// Authorization: DESCRIBE on CLUSTER, else CLUSTER_AUTHORIZATION_FAILED at
// the top level, as Kafka.

import (
	"context"
	"maps"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/network"
)

var describeUserScramCredentialsAPI = api{key: 50, min: 0, max: 0, handle: (*Handlers).describeUserScramCredentials}

func (h *Handlers) describeUserScramCredentials(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.DescribeUserSCRAMCredentialsRequest)
	resp := r.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
	if !h.authorizedCluster(ctx, req, kmsg.ACLOperationDescribe) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	img := h.image()

	var users []string
	times := map[string]int{}
	if len(r.Users) == 0 {
		users = slices.Sorted(maps.Keys(img.Scram))
	}
	for _, u := range r.Users {
		if times[u.Name] == 0 {
			users = append(users, u.Name)
		}
		times[u.Name]++
	}
	for _, user := range users {
		res := kmsg.NewDescribeUserSCRAMCredentialsResponseResult()
		res.User = user
		creds := img.Scram[user]
		switch {
		case times[user] > 1:
			msg := "Cannot describe SCRAM credentials for the same user twice in a single request: " + user
			res.ErrorCode, res.ErrorMessage = kerr.DuplicateResource.Code, &msg
		case len(creds) == 0:
			msg := "Attempt to describe a user credential that does not exist: " + user
			res.ErrorCode, res.ErrorMessage = kerr.ResourceNotFound.Code, &msg
		default:
			for _, mech := range slices.Sorted(maps.Keys(creds)) {
				info := kmsg.NewDescribeUserSCRAMCredentialsResponseResultCredentialInfo()
				info.Mechanism, info.Iterations = mech, creds[mech].Iterations
				res.CredentialInfos = append(res.CredentialInfos, info)
			}
		}
		resp.Results = append(resp.Results, res)
	}
	return resp, nil
}
