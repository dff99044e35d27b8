package handlers

// ApiVersions (key 18), v0-4. Lists the APIs this listener serves with their
// version ranges, and the finalized features (metadata.version) from the
// metadata image. A request above v4 reaches here as a v0 request with
// UnsupportedVersion set (the network layer's KIP-511 path): the answer is a
// v0 response with UNSUPPORTED_VERSION and ApiVersions' own range, so the
// client can retry at a version both sides know. Client software name and version (v3+)
// must match Kafka's pattern, else INVALID_REQUEST.

import (
	"context"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
	"gregor/internal/network"
)

var apiVersionsAPI = api{key: 18, min: apiVersionsMin, max: apiVersionsMax, handle: (*Handlers).apiVersions}

const apiVersionsMin, apiVersionsMax = 0, 4

// softwareNamePattern is Kafka's rule for client software names and versions (KIP-511).
var softwareNamePattern = regexp.MustCompile(`^[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?$`)

func (h *Handlers) apiVersions(_ context.Context, req *network.Request) (kmsg.Response, error) {
	r := req.Body.(*kmsg.ApiVersionsRequest)
	resp := r.ResponseKind().(*kmsg.ApiVersionsResponse)
	if req.UnsupportedVersion {
		// As Kafka: only ApiVersions' own range, which is what clients
		// read to pick the version of their retry.
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		resp.ApiKeys = []kmsg.ApiVersionsResponseApiKey{{ApiKey: 18, MinVersion: apiVersionsMin, MaxVersion: apiVersionsMax}}
		return resp, nil
	}
	if r.Version >= 3 && (!softwareNamePattern.MatchString(r.ClientSoftwareName) || !softwareNamePattern.MatchString(r.ClientSoftwareVersion)) {
		resp.ErrorCode = kerr.InvalidRequest.Code // and no keys, as Kafka
		return resp, nil
	}
	for _, a := range h.apis {
		if a == nil {
			continue
		}
		resp.ApiKeys = append(resp.ApiKeys, kmsg.ApiVersionsResponseApiKey{ApiKey: a.key, MinVersion: a.min, MaxVersion: a.max})
	}
	if h.d.Replica != nil {
		img := h.image()
		level := img.Features[metadata.MetadataVersionFeature]
		resp.SupportedFeatures = []kmsg.ApiVersionsResponseSupportedFeature{{
			Name: metadata.MetadataVersionFeature, MinVersion: metadata.MinMetadataVersion, MaxVersion: metadata.LatestMetadataVersion,
		}}
		if level > 0 {
			resp.FinalizedFeaturesEpoch = img.Offset
			resp.FinalizedFeatures = []kmsg.ApiVersionsResponseFinalizedFeature{{
				Name: metadata.MetadataVersionFeature, MinVersionLevel: level, MaxVersionLevel: level,
			}}
		}
	}
	return resp, nil
}
