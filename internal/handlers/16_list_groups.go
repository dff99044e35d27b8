package handlers

// ListGroups (key 16), versions 0-5: the groups of every coordinator shard on
// this broker; v4+ filters by state, v5+ by type ("classic", "consumer",
// "share").
// COORDINATOR_LOAD_IN_PROGRESS while a shard is loading, with what is known.
//
// DESCRIBE on the cluster lists every group; without it only the groups
// with DESCRIBE are listed (as Kafka).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/coordinator"
	"gregor/internal/coordinator/group"
	"gregor/internal/network"
)

var listGroupsAPI = api{key: 16, min: 0, max: 5, handle: (*Handlers).listGroups}

func (h *Handlers) listGroups(ctx context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ListGroupsRequest)
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = r.Version
	resp.Groups = []kmsg.ListGroupsResponseGroup{}
	if h.d.Groups == nil {
		return resp, nil
	}
	partitions, loading := h.d.Groups.Partitions()
	if loading {
		resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
	}
	all := h.authorizedCluster(ctx, req, kmsg.ACLOperationDescribe)
	for _, p := range partitions {
		err := h.d.Groups.Do(ctx, p, func(s coordinator.Shard, _ *coordinator.Writer) {
			for _, g := range s.(group.Coordinated).ListGroups(r.StatesFilter, r.TypesFilter) {
				if all || h.authorized(ctx, req, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeGroup, g.Group) {
					resp.Groups = append(resp.Groups, g)
				}
			}
		})
		if err != nil && resp.ErrorCode == 0 {
			resp.ErrorCode = kerr.CoordinatorLoadInProgress.Code
		}
	}
	return resp, nil
}
