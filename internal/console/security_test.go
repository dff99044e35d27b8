package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

type securityAnswer struct {
	ACLs struct {
		Items    []map[string]string `json:"items"`
		Disabled bool                `json:"disabled"`
		Error    string              `json:"error"`
	} `json:"acls"`
	Quotas struct {
		Items []struct {
			Entity string             `json:"entity"`
			Values map[string]float64 `json:"values"`
		} `json:"items"`
		Error string `json:"error"`
	} `json:"quotas"`
}

// TestSecurityPageWithoutAuthorizer: a cluster without an authorizer says
// so instead of listing no ACLs.
func TestSecurityPageWithoutAuthorizer(t *testing.T) {
	n := startNode(t)
	resp, err := http.Get(n.url("/api/security"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s securityAnswer
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != 200 {
		t.Fatalf("/api/security: %d %v", resp.StatusCode, err)
	}
	if !s.ACLs.Disabled || len(s.ACLs.Items) != 0 {
		t.Fatalf("ACLs without an authorizer: %+v", s.ACLs)
	}
}

// TestSecurityPageAsVisitor: the security page shows what the logged-in
// principal may see: alice without DESCRIBE on the cluster gets the
// authorizer's refusal, and once granted it, the ACLs.
func TestSecurityPageAsVisitor(t *testing.T) {
	const alicePassword = "alice-s3cret"
	n, err := tryStartNode(t, map[string]string{
		"listeners":                      "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
		"sasl.enabled.mechanisms":        "PLAIN",
		"listener.name.sasl_plaintext.plain.sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="` + alicePassword + `";`,
		"authorizer.class.name":                               "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		// The PLAINTEXT listeners (the test's admin client, the node
		// talking to itself) are anonymous.
		"super.users": "User:ANONYMOUS",
	})
	if err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	defer browser.CloseIdleConnections()
	get := func() securityAnswer {
		t.Helper()
		resp, err := browser.Get(n.url("/api/security"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var s securityAnswer
		if err := json.Unmarshal(b, &s); err != nil || resp.StatusCode != 200 {
			t.Fatalf("/api/security: %d %s", resp.StatusCode, b)
		}
		return s
	}
	resp, err := browser.Post(n.url("/api/login"), "application/json",
		strings.NewReader(`{"user":"alice","password":"`+alicePassword+`","mechanism":"PLAIN"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("login: %d", resp.StatusCode)
	}

	adm := kadm.NewClient(n.client())
	ctx := ctxT(t)
	readOrders := kadm.NewACLs().Allow("User:bob").Topics("orders").Operations(kadm.OpRead)
	if _, err := adm.CreateACLs(ctx, readOrders); err != nil {
		t.Fatal(err)
	}
	if s := get(); !strings.Contains(s.ACLs.Error, "CLUSTER_AUTHORIZATION_FAILED") || len(s.ACLs.Items) != 0 {
		t.Fatalf("alice without DESCRIBE on the cluster: %+v", s.ACLs)
	}

	aliceDescribes := kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpDescribe)
	if _, err := adm.CreateACLs(ctx, aliceDescribes); err != nil {
		t.Fatal(err)
	}
	s := get()
	if s.ACLs.Error != "" || len(s.ACLs.Items) != 2 {
		t.Fatalf("alice with DESCRIBE on the cluster: %+v", s.ACLs)
	}
	found := false
	for _, a := range s.ACLs.Items {
		if a["principal"] == "User:bob" && a["resourceType"] == "TOPIC" && a["resource"] == "orders" &&
			a["operation"] == "READ" && a["permission"] == "ALLOW" && a["patternType"] == "LITERAL" {
			found = true
		}
	}
	if !found {
		t.Fatalf("bob's ACL not shown: %+v", s.ACLs.Items)
	}

	// Quotas need DESCRIBE_CONFIGS on the cluster.
	if !strings.Contains(s.Quotas.Error, "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("alice's quotas without DESCRIBE_CONFIGS: %+v", s.Quotas)
	}
	aliceConfigs := kadm.NewACLs().Allow("User:alice").Clusters().Operations(kadm.OpDescribeConfigs)
	if _, err := adm.CreateACLs(ctx, aliceConfigs); err != nil {
		t.Fatal(err)
	}
	slow := "slow"
	if _, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "client-id", Name: &slow}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1048576}},
	}}); err != nil {
		t.Fatal(err)
	}
	s = get()
	if s.Quotas.Error != "" || len(s.Quotas.Items) != 1 || s.Quotas.Items[0].Entity != "client-id=slow" ||
		s.Quotas.Items[0].Values["producer_byte_rate"] != 1048576 {
		t.Fatalf("alice with DESCRIBE_CONFIGS: %+v", s.Quotas)
	}
}
