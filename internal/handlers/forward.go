package handlers

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Forwarder sends a request to the active controller and returns its
// answer, retrying across controller changes until ctx ends.
type Forwarder func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

// ForwardingController is the ControllerAPI of a broker listener: every
// admin request goes to the active controller, wherever it runs (Kafka's
// ForwardingManager). When the controller cannot be reached in time, each
// topic or resource of the request gets the error (NOT_CONTROLLER, or
// REQUEST_TIMED_OUT when the wait ran out).
func ForwardingController(forward Forwarder) ControllerAPI { return forwarding{forward} }

type forwarding struct{ forward Forwarder }

// failure is the error code a request gets when forwarding fails.
func failure(err error) int16 {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return ke.Code
	case errors.Is(err, context.DeadlineExceeded):
		return kerr.RequestTimedOut.Code
	default:
		return kerr.NotController.Code
	}
}

func (f forwarding) CreateTopics(ctx context.Context, req *kmsg.CreateTopicsRequest) *kmsg.CreateTopicsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.CreateTopicsResponse)
	}
	resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
	msg := err.Error()
	for _, t := range req.Topics {
		rt := kmsg.NewCreateTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, failure(err), &msg
		rt.NumPartitions, rt.ReplicationFactor = -1, -1
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (f forwarding) DeleteTopics(ctx context.Context, req *kmsg.DeleteTopicsRequest) *kmsg.DeleteTopicsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.DeleteTopicsResponse)
	}
	resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
	msg := err.Error()
	names := req.TopicNames
	if req.Version >= 6 {
		names = nil
		for _, t := range req.Topics {
			rt := kmsg.NewDeleteTopicsResponseTopic()
			rt.Topic, rt.TopicID, rt.ErrorCode, rt.ErrorMessage = t.Topic, t.TopicID, failure(err), &msg
			resp.Topics = append(resp.Topics, rt)
		}
	}
	for _, n := range names {
		rt := kmsg.NewDeleteTopicsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = &n, failure(err), &msg
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (f forwarding) CreatePartitions(ctx context.Context, req *kmsg.CreatePartitionsRequest) *kmsg.CreatePartitionsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.CreatePartitionsResponse)
	}
	resp := req.ResponseKind().(*kmsg.CreatePartitionsResponse)
	msg := err.Error()
	for _, t := range req.Topics {
		rt := kmsg.NewCreatePartitionsResponseTopic()
		rt.Topic, rt.ErrorCode, rt.ErrorMessage = t.Topic, failure(err), &msg
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

func (f forwarding) AlterConfigs(ctx context.Context, req *kmsg.AlterConfigsRequest) *kmsg.AlterConfigsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.AlterConfigsResponse)
	}
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	msg := err.Error()
	for _, r := range req.Resources {
		rr := kmsg.NewAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, failure(err), &msg
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (f forwarding) IncrementalAlterConfigs(ctx context.Context, req *kmsg.IncrementalAlterConfigsRequest) *kmsg.IncrementalAlterConfigsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.IncrementalAlterConfigsResponse)
	}
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	msg := err.Error()
	for _, r := range req.Resources {
		rr := kmsg.NewIncrementalAlterConfigsResponseResource()
		rr.ResourceType, rr.ResourceName, rr.ErrorCode, rr.ErrorMessage = r.ResourceType, r.ResourceName, failure(err), &msg
		resp.Resources = append(resp.Resources, rr)
	}
	return resp
}

func (f forwarding) AlterUserScramCredentials(ctx context.Context, req *kmsg.AlterUserSCRAMCredentialsRequest) *kmsg.AlterUserSCRAMCredentialsResponse {
	kresp, err := f.forward(ctx, req)
	if err == nil {
		return kresp.(*kmsg.AlterUserSCRAMCredentialsResponse)
	}
	resp := req.ResponseKind().(*kmsg.AlterUserSCRAMCredentialsResponse)
	msg := err.Error()
	seen := map[string]bool{}
	add := func(user string) {
		if seen[user] {
			return
		}
		seen[user] = true
		r := kmsg.NewAlterUserSCRAMCredentialsResponseResult()
		r.User, r.ErrorCode, r.ErrorMessage = user, failure(err), &msg
		resp.Results = append(resp.Results, r)
	}
	for _, d := range req.Deletions {
		add(d.Name)
	}
	for _, u := range req.Upsertions {
		add(u.Name)
	}
	return resp
}

// NotController reports whether a controller's answer says it is not the
// active controller (then the request is retried at the new one).
func NotController(resp kmsg.Response) bool {
	nc := kerr.NotController.Code
	switch r := resp.(type) {
	case *kmsg.CreateTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteTopicsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreatePartitionsResponse:
		for _, t := range r.Topics {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.IncrementalAlterConfigsResponse:
		for _, t := range r.Resources {
			if t.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterUserSCRAMCredentialsResponse:
		for _, u := range r.Results {
			if u.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.CreateACLsResponse:
		for _, c := range r.Results {
			if c.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.DeleteACLsResponse:
		for _, f := range r.Results {
			if f.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.AlterClientQuotasResponse:
		for _, e := range r.Entries {
			if e.ErrorCode == nc {
				return true
			}
		}
	case *kmsg.UpdateFeaturesResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerRegistrationResponse:
		return r.ErrorCode == nc
	case *kmsg.BrokerHeartbeatResponse:
		return r.ErrorCode == nc
	case *kmsg.AllocateProducerIDsResponse:
		return r.ErrorCode == nc
	case *kmsg.AlterPartitionResponse:
		return r.ErrorCode == nc
	case *kmsg.ElectLeadersResponse:
		if r.ErrorCode == nc {
			return true
		}
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == nc {
					return true
				}
			}
		}
	case *kmsg.AlterPartitionAssignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.ListPartitionReassignmentsResponse:
		return r.ErrorCode == nc
	case *kmsg.UnregisterBrokerResponse:
		return r.ErrorCode == nc
	case *kmsg.DescribeQuorumResponse:
		for _, t := range r.Topics {
			for _, p := range t.Partitions {
				if p.ErrorCode == kerr.NotLeaderForPartition.Code {
					return true
				}
			}
		}
	}
	return false
}
