package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"gregor/internal/config"
	"gregor/internal/server"
)

// testCluster is an in-process Gregor node on free ports, data in a temp dir.
type testCluster struct {
	t   *testing.T
	srv *server.Server
}

func startCluster(t *testing.T, extra map[string]string) *testCluster {
	t.Helper()
	c, err := tryStartCluster(t, extra)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tryStartCluster is startCluster returning the error of a node that
// does not start.
func tryStartCluster(t *testing.T, extra map[string]string) (*testCluster, error) {
	t.Helper()
	props := map[string]string{
		"listeners":                        "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters":         "1@127.0.0.1:0",
		"log.dirs":                         t.TempDir(),
		"group.initial.rebalance.delay.ms": "0",
		"offsets.topic.num.partitions":     "3",
		"gregor.http.listen":               "127.0.0.1:0",
	}
	for k, v := range extra {
		props[k] = v
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		return nil, err
	}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	shutdown := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return srv.Shutdown(ctx)
	}
	if err := srv.Start(context.Background()); err != nil {
		_ = shutdown() // stops what did start; its errors repeat err
		return nil, err
	}
	t.Cleanup(func() {
		if err := shutdown(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return &testCluster{t: t, srv: srv}, nil
}

func (c *testCluster) addr() string { return c.srv.Addr("PLAINTEXT").String() }

// result is what one command run printed and returned.
type result struct {
	out, errOut string
	err         error
}

// run executes `gregor ARGS...` against the cluster, with stdin as input.
func (c *testCluster) run(stdin string, args ...string) result {
	c.t.Helper()
	return runCommand(c.t, stdin, append(args, "--bootstrap-server", c.addr(), "--timeout", "10s")...)
}

// ok runs a command that must succeed and returns its standard output.
func (c *testCluster) ok(args ...string) string {
	c.t.Helper()
	r := c.run("", args...)
	if r.err != nil {
		c.t.Fatalf("gregor %s: %v\nstderr: %s", strings.Join(args, " "), r.err, r.errOut)
	}
	return r.out
}

// fails runs a command that must fail with an error containing want.
func (c *testCluster) fails(want string, args ...string) {
	c.t.Helper()
	r := c.run("", args...)
	if r.err == nil || !strings.Contains(r.err.Error(), want) {
		c.t.Fatalf("gregor %s: error %v, want one containing %q", strings.Join(args, " "), r.err, want)
	}
	if strings.Contains(r.err.Error(), "\n") {
		c.t.Errorf("gregor %s: error is not one line: %q", strings.Join(args, " "), r.err)
	}
}

func runCommand(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	root := &cobra.Command{Use: "gregor", SilenceUsage: true, SilenceErrors: true}
	root.SetFlagErrorFunc(HintFlagError) // as cmd/gregor does
	root.AddCommand(Commands()...)
	var out, errOut bytes.Buffer
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return result{out: out.String(), errOut: errOut.String(), err: err}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// lines splits output into lines without the trailing empty one.
func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// fields finds the table row whose first columns are prefix and returns its
// columns.
func row(t *testing.T, table string, prefix ...string) []string {
	t.Helper()
	for _, l := range lines(table) {
		f := strings.Fields(l)
		if len(f) >= len(prefix) && strings.Join(f[:len(prefix)], " ") == strings.Join(prefix, " ") {
			return f
		}
	}
	t.Fatalf("no row %q in:\n%s", prefix, table)
	return nil
}

func TestUnreachableBroker(t *testing.T) {
	start := time.Now()
	r := runCommand(t, "", "topic", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1s")
	if r.err == nil || !strings.Contains(r.err.Error(), "cannot reach a broker at 127.0.0.1:1 within 1s") ||
		!strings.Contains(r.err.Error(), "connection refused") {
		t.Fatalf("error %v, want cannot reach ... connection refused", r.err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s to give up", d)
	}
	r = runCommand(t, "", "cluster", "describe", "--bootstrap-server", "127.0.0.1:1", "--timeout", "0s")
	if r.err == nil || !strings.Contains(r.err.Error(), "--timeout must be positive") {
		t.Fatalf("error %v", r.err)
	}
}

func TestBootstrapFromEnv(t *testing.T) {
	t.Setenv(BootstrapEnv, "127.0.0.1:2, 127.0.0.1:3")
	c := &connFlags{}
	if got := strings.Join(c.seeds(), " "); got != "127.0.0.1:2 127.0.0.1:3" {
		t.Fatalf("seeds %q", got)
	}
	c.bootstrap = "h:1"
	if got := strings.Join(c.seeds(), " "); got != "h:1" {
		t.Fatalf("flag should win over env: %q", got)
	}
	t.Setenv(BootstrapEnv, "")
	c.bootstrap = ""
	if got := strings.Join(c.seeds(), " "); got != defaultBootstrap {
		t.Fatalf("default %q", got)
	}
}

func TestClusterDescribe(t *testing.T) {
	c := startCluster(t, nil)
	out := c.ok("cluster", "describe")
	if !strings.Contains(out, "Cluster ID: "+c.srv.ClusterID()+"\n") || !strings.Contains(out, "Controller: 1\n") {
		t.Fatalf("cluster describe:\n%s", out)
	}
	host, port, _ := strings.Cut(c.addr(), ":")
	if f := row(t, out, "1"); f[1] != host || f[2] != port {
		t.Fatalf("broker row %q, want %s %s", f, host, port)
	}
}

func TestParseKeyValues(t *testing.T) {
	kv, order, err := parseKeyValues("config", []string{"a=1,b=[x,y]", "c=", "a=2"})
	if err != nil {
		t.Fatal(err)
	}
	if kv["a"] != "2" || kv["b"] != "x,y" || kv["c"] != "" || strings.Join(order, ",") != "a,b,c" {
		t.Fatalf("got %v %v", kv, order)
	}
	if _, _, err := parseKeyValues("config", []string{"novalue"}); err == nil {
		t.Fatal("want error for a pair without =")
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestClusterQuorum(t *testing.T) {
	c := startCluster(t, nil)
	out := c.ok("cluster", "quorum")
	if !strings.Contains(out, "LeaderId:      1\n") {
		t.Fatalf("cluster quorum:\n%s", out)
	}
	if f := row(t, out, "1"); f[len(f)-1] != "Leader" {
		t.Fatalf("voter row %q, want node 1 as Leader", f)
	}
}

// TestWaitsForStartingBroker: a command run while the broker is still
// starting (connection refused) waits for it within --timeout instead of
// failing at the first refusal.
func TestWaitsForStartingBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	started := make(chan *kfake.Cluster, 1)
	go func() {
		time.Sleep(300 * time.Millisecond) // the broker starts after the command
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(port), kfake.SeedTopics(1, "late"))
		if err != nil {
			t.Error(err)
		}
		started <- c
	}()
	r := runCommand(t, "", "topic", "list", "--bootstrap-server", fmt.Sprintf("127.0.0.1:%d", port), "--timeout", "30s")
	if c := <-started; c != nil {
		defer c.Close()
	}
	if r.err != nil || !strings.Contains(r.out, "late") {
		t.Fatalf("topic list against a starting broker: %v\n%s", r.err, r.out)
	}
}
