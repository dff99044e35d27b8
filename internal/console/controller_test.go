package console_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"testing"

	"gregor/internal/server"
)

// TestActiveControllerIsTheQuorumLeader: with the controller on a node of
// its own, the broker's DescribeCluster names the broker (KRaft brokers do),
// but the console shows the metadata quorum's leader as the active
// controller.
func TestActiveControllerIsTheQuorumLeader(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	voters := fmt.Sprintf("1@127.0.0.1:%d", port)
	id := server.RandomUUID()
	ctrlDir, brokerDir := t.TempDir(), t.TempDir()
	if _, err := server.Format([]string{ctrlDir}, 1, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Format([]string{brokerDir}, 2, id, false); err != nil {
		t.Fatal(err)
	}
	if _, err := tryStartNode(t, map[string]string{
		"process.roles": "controller", "node.id": "1",
		"listeners":                fmt.Sprintf("CONTROLLER://127.0.0.1:%d", port),
		"controller.quorum.voters": voters, "log.dirs": ctrlDir,
	}); err != nil {
		t.Fatal(err)
	}
	b, err := tryStartNode(t, map[string]string{
		"process.roles": "broker", "node.id": "2",
		"listeners":                "PLAINTEXT://127.0.0.1:0",
		"controller.quorum.voters": voters, "log.dirs": brokerDir,
	})
	if err != nil {
		t.Fatal(err)
	}
	var cluster struct {
		ControllerID int32 `json:"controllerId"`
		Brokers      []struct {
			ID int32 `json:"id"`
		} `json:"brokers"`
		Quorum *struct {
			LeaderID int32 `json:"leaderId"`
		} `json:"quorum"`
	}
	resp, err := http.Get(b.url("/api/cluster"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&cluster); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/cluster: %d %v", resp.StatusCode, err)
	}
	if cluster.Quorum == nil || cluster.Quorum.LeaderID != 1 || cluster.ControllerID != 1 ||
		len(cluster.Brokers) != 1 || cluster.Brokers[0].ID != 2 {
		t.Fatalf("active controller %d, quorum %+v, brokers %+v: want controller 1 (the quorum leader), broker 2",
			cluster.ControllerID, cluster.Quorum, cluster.Brokers)
	}
}
