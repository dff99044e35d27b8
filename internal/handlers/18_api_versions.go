package handlers

// ApiVersions (key 18), v0-4. Lists the APIs this listener serves with their
// version ranges, the features this build supports and the finalized
// feature levels of the metadata image, with the image's offset as their
// epoch (DescribeFeatures is this request). As Kafka, a v0-3 answer leaves
// out the supported features whose lowest level is 0, which older clients
// cannot read (KAFKA-17492), and a finalized level 0 is no finalized
// feature. A request above v4 reaches here as a v0 request with
// UnsupportedVersion set (the network layer's KIP-511 path): the answer is a
// v0 response with UNSUPPORTED_VERSION and ApiVersions' own range, so the
// client can retry at a version both sides know. Client software name and version (v3+)
// must match Kafka's pattern, else INVALID_REQUEST.

import (
	"context"
	"regexp"
	"slices"

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
	if h.d.Image != nil {
		h.appendFeatures(resp, r.Version)
	}
	return resp, nil
}

// appendFeatures adds the supported and finalized features to resp, an
// answer at version v.
func (h *Handlers) appendFeatures(resp *kmsg.ApiVersionsResponse, v int16) {
	for _, f := range metadata.SupportedFeatures() {
		if v < 4 && f.Min == 0 {
			continue
		}
		resp.SupportedFeatures = append(resp.SupportedFeatures, kmsg.ApiVersionsResponseSupportedFeature{Name: f.Name, MinVersion: f.Min, MaxVersion: f.Max})
	}
	img := h.image()
	resp.FinalizedFeaturesEpoch = img.Offset
	names := make([]string, 0, len(img.Features))
	for name, level := range img.Features {
		if level != 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		level := img.Features[name]
		resp.FinalizedFeatures = append(resp.FinalizedFeatures, kmsg.ApiVersionsResponseFinalizedFeature{Name: name, MinVersionLevel: level, MaxVersionLevel: level})
	}
}
