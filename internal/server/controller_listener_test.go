package server

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestControllerListenerAnswers: requests the fuzzer of the controller
// listener found panicking (a nil replica manager or quorum on a one-voter
// node) are answered. A handler panic closes the connection, which the
// client sees as a failed request.
func TestControllerListenerAnswers(t *testing.T) {
	ts := startServer(t, t.TempDir(), nil)
	adm := ts.admin()
	if _, err := adm.CreateTopic(ctxT(t), 1, 1, nil, "a"); err != nil {
		t.Fatal(err)
	}
	ctrl, err := kgo.NewClient(kgo.SeedBrokers(ts.srv.Addr("CONTROLLER").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	seed := func(req kmsg.Request) kmsg.Response {
		t.Helper()
		resp, err := ctrl.SeedBrokers()[0].Request(ctxT(t), req)
		if err != nil {
			t.Fatalf("%s: %v", kmsg.NameForKey(req.Key()), err)
		}
		return resp
	}

	describe := kmsg.NewPtrDescribeConfigsRequest()
	describe.Resources = []kmsg.DescribeConfigsRequestResource{
		{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "a", ConfigNames: []string{"retention.ms"}},
		{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1", ConfigNames: []string{"log.dirs"}},
	}
	for _, rr := range seed(describe).(*kmsg.DescribeConfigsResponse).Resources {
		if rr.ErrorCode != 0 || len(rr.Configs) != 1 {
			t.Errorf("DescribeConfigs %v %s at the controller: error %d, %d configs", rr.ResourceType, rr.ResourceName, rr.ErrorCode, len(rr.Configs))
		}
	}

	snap := kmsg.NewPtrFetchSnapshotRequest()
	snap.Topics = []kmsg.FetchSnapshotRequestTopic{{Topic: "__cluster_metadata",
		Partitions: []kmsg.FetchSnapshotRequestTopicPartition{{Partition: 0}}}}
	if code := seed(snap).(*kmsg.FetchSnapshotResponse).ErrorCode; code != kerr.UnknownServerError.Code {
		t.Errorf("FetchSnapshot of a one-voter node: error %d, want UNKNOWN_SERVER_ERROR", code)
	}
}
