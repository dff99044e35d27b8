package cli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestTransactions(t *testing.T) {
	c := startCluster(t, nil)
	c.ok("topic", "create", "tx", "--partitions", "1")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.addr()), kgo.TransactionalID("app-1"), kgo.DefaultProduceTopic("tx"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, kgo.StringRecord("open")).FirstErr(); err != nil {
		t.Fatal(err)
	}

	if f := row(t, c.ok("transactions", "list"), "app-1"); f[1] != "1" || f[3] != "Ongoing" {
		t.Fatalf("list row %q", f)
	}
	out := c.ok("transactions", "describe", "--transactional-id", "app-1")
	if f := row(t, out, "1"); f[1] != "app-1" || f[4] != "Ongoing" || f[len(f)-1] != "tx-0" {
		t.Fatalf("describe row %q in\n%s", f, out)
	}
	out = c.ok("transactions", "describe-producers", "--topic", "tx", "--partition", "0")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasSuffix(lines[1], " 0") {
		t.Fatalf("describe-producers (the open transaction starts at 0):\n%s", out)
	}

	if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatal(err)
	}
	c.fails("TRANSACTIONAL_ID_NOT_FOUND", "transactions", "describe", "--transactional-id", "nobody")
	c.fails("--transactional-id is required", "transactions", "describe")
	c.fails("--topic and --partition are required", "transactions", "describe-producers", "--topic", "tx")
}
