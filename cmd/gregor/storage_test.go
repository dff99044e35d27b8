package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/config"
	"gregor/internal/server"
)

func runStorage(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newStorageCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.Execute()
	return out.String(), err
}

// TestFormatAddScram: credentials given to `storage format --add-scram`
// are in the cluster once it first starts, and keep working as any other.
func TestFormatAddScram(t *testing.T) {
	dir := t.TempDir()
	overrides := []string{
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters=1@127.0.0.1:0",
		"log.dirs=" + dir,
		"gregor.http.listen=",
	}
	var args []string
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	format := append([]string{"format", "--cluster-id", server.RandomUUID()}, args...)

	// A bad credential fails before anything is written, and does not
	// repeat the password.
	_, err := runStorage(t, append(format, "--add-scram", "SCRAM-SHA-256=[name=alice,password=hunter2,iterations=10]")...)
	if err == nil || !strings.Contains(err.Error(), "--add-scram: SCRAM-SHA-256 for user \"alice\": iterations must be at least 4096") || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("bad --add-scram: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("a failed format wrote %d files", len(entries))
	}

	// bootstrap.checkpoint is written before meta.properties: when it
	// cannot be (a directory is in its way), the metadata log dir is not
	// left formatted without it.
	blocker := filepath.Join(dir, "bootstrap.checkpoint")
	if err := os.Mkdir(blocker, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runStorage(t, format...); err == nil {
		t.Fatal("format succeeded with a directory where bootstrap.checkpoint goes")
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.properties")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("meta.properties after a failed bootstrap write: %v", err)
	}
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}

	out, err := runStorage(t, append(format,
		"--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
		"-S", `SCRAM-SHA-512=[name=bob,iterations=8192,salt="N3E=",saltedpassword="YCE="]`)...)
	if err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bootstrap.checkpoint")); err != nil {
		t.Fatalf("no bootstrap.checkpoint: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := startFormatted(t, ctx, overrides)
	described, err := kadm.NewClient(cl).DescribeUserSCRAMs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	alice, bob := described["alice"], described["bob"]
	if len(described) != 2 || alice.Err != nil || bob.Err != nil ||
		len(alice.CredInfos) != 1 || alice.CredInfos[0].Mechanism != kadm.ScramSha256 || alice.CredInfos[0].Iterations != 4096 ||
		len(bob.CredInfos) != 1 || bob.CredInfos[0].Mechanism != kadm.ScramSha512 || bob.CredInfos[0].Iterations != 8192 {
		t.Fatalf("described %+v", described)
	}

	// Formatting again with --ignore-formatted leaves the bootstrap alone.
	before, _ := os.ReadFile(filepath.Join(dir, "bootstrap.checkpoint"))
	if out, err := runStorage(t, append(format, "--ignore-formatted", "--add-scram", "SCRAM-SHA-256=[name=eve,password=x]")...); err != nil || out != "" {
		t.Fatalf("format --ignore-formatted: %v\n%s", err, out)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "bootstrap.checkpoint"))
	if !bytes.Equal(before, after) {
		t.Fatal("formatting a formatted directory rewrote its bootstrap.checkpoint")
	}
}

// TestFormatStandalone: `storage format --standalone`, as Kafka 4.0's
// quick start runs it on a controller configured with only its own
// bootstrap server, formats a node that then starts as the single voter;
// where the configuration names other voters, or the node is no
// controller, it fails before writing anything.
func TestFormatStandalone(t *testing.T) {
	dir := t.TempDir()
	overrides := []string{
		"process.roles=broker,controller",
		"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.listener.names=CONTROLLER",
		"controller.quorum.bootstrap.servers=127.0.0.1:0", // Kafka 4.0's config/server.properties, no voters
		"log.dirs=" + dir,
		"gregor.http.listen=",
	}
	args := func(extra ...string) []string {
		out := []string{"format", "--cluster-id", server.RandomUUID()}
		for _, o := range append(append([]string{}, overrides...), extra...) {
			out = append(out, "--override", o)
		}
		return out
	}

	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"other voters", []string{"controller.quorum.voters=1@127.0.0.1:0,2@127.0.0.1:1,3@127.0.0.1:2"},
			"--standalone makes node 1 the only voter, but controller.quorum.voters=1@127.0.0.1:0,2@127.0.0.1:1,3@127.0.0.1:2; Gregor's quorum is static"},
		{"broker only", []string{"process.roles=broker", "listeners=PLAINTEXT://127.0.0.1:0", "controller.quorum.voters=2@127.0.0.1:1"},
			"--standalone formats a controller as the only voter of its quorum, but process.roles=broker has no controller role"},
	} {
		_, err := runStorage(t, append(args(tc.extra...), "--standalone")...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%s: a refused format wrote %d files", tc.name, len(entries))
		}
	}

	out, err := runStorage(t, append(args(), "-s")...)
	if err != nil {
		t.Fatalf("format --standalone: %v\n%s", err, out)
	}
	if !strings.Contains(out, "Formatting "+dir+" with cluster.id ") || !strings.Contains(out, "Node 1 at 127.0.0.1:0 is the only voter of the metadata quorum\n") {
		t.Fatalf("format --standalone printed:\n%s", out)
	}
	props, err := loadProperties("", overrides)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr("PLAINTEXT").String()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrDescribeQuorumRequest()
	rt := kmsg.NewDescribeQuorumRequestTopic()
	rt.Topic = "__cluster_metadata"
	rt.Partitions = append(rt.Partitions, kmsg.NewDescribeQuorumRequestTopicPartition())
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil || len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("describe quorum: %v %+v", err, resp)
	}
	if p := resp.Topics[0].Partitions[0]; p.LeaderID != 1 || len(p.CurrentVoters) != 1 || p.CurrentVoters[0].ReplicaID != 1 {
		t.Fatalf("quorum after --standalone: leader %d, voters %+v", p.LeaderID, p.CurrentVoters)
	}
}

// TestFlagValueNames: pflag takes a back-quoted word in a flag's usage as
// the name of its value (`--cluster-id ID`); a back-quoted command there
// would print as `--cluster-id gregor storage random-uuid`.
func TestFlagValueNames(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(name, " ") {
				t.Errorf("%s --%s: value name %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())

	cmd, _, err := newRootCommand().Find([]string{"storage", "format"})
	if err != nil {
		t.Fatal(err)
	}
	if usage := cmd.LocalFlags().FlagUsages(); !strings.Contains(usage, "-t, --cluster-id ID ") {
		t.Errorf("storage format usage:\n%s", usage)
	}
}

// TestFormatFeatures: `storage format --feature` and --release-version
// choose the feature levels a new cluster starts with, checked as
// kafka-storage checks them; the cluster then runs at those levels.
func TestFormatFeatures(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // error, or "" to succeed
	}{
		{[]string{"--feature", "share.version=2"}, "no feature share.version with level 2 (supported: 0 to 1)"},
		{[]string{"--feature", "transaction.version=3"}, "no feature transaction.version with level 3 (supported: 0 to 2)"},
		{[]string{"--feature", "no.such.version=1"}, "unsupported feature: no.such.version. Supported features are: eligible.leader.replicas.version, group.version, share.version, transaction.version"},
		{[]string{"--feature", "share.version"}, "--feature: can't parse feature=level string share.version: equals sign not found"},
		{[]string{"--release-version", "4.0", "--feature", "metadata.version=22"}, "use --release-version instead of --feature metadata.version=X to avoid ambiguity"},
		{[]string{"--release-version", "2.8"}, `unknown release version "2.8"; supported: 3.3-IV3 to 4.0-IV3`},
		{[]string{"--feature", "metadata.version=5"}, "unknown metadata.version 5; supported: 7 (3.3-IV3) to 25 (4.0-IV3)"},
	} {
		dir := t.TempDir()
		args := append([]string{"format", "--cluster-id", server.RandomUUID(), "--override", "log.dirs=" + dir,
			"--override", "listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "--override", "controller.quorum.voters=1@127.0.0.1:0"}, tc.args...)
		if _, err := runStorage(t, args...); err == nil || err.Error() != tc.want {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%v: a failed format wrote %d files", tc.args, len(entries))
		}
	}
	levels := func(args ...string) map[string]int16 {
		t.Helper()
		out, err := formatFeatureLevels("", args)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got, err := formatFeatureLevels("3.9", nil); err != nil || got["metadata.version"] != 21 || got["group.version"] != 0 || got["share.version"] != 0 {
		t.Errorf("--release-version 3.9: %v %v", got, err)
	}
	if got := levels("metadata.version=22"); got["group.version"] != 1 || got["share.version"] != 0 || got["transaction.version"] != 0 {
		t.Errorf("--feature metadata.version=22: %v", got)
	}

	// share.version=0 at format: the cluster starts with share groups off.
	dir := t.TempDir()
	overrides := []string{"listeners=PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0", "controller.quorum.voters=1@127.0.0.1:0",
		"log.dirs=" + dir, "gregor.http.listen="}
	args := []string{"format", "--cluster-id", server.RandomUUID(), "--feature", "share.version=0"}
	for _, o := range overrides {
		args = append(args, "--override", o)
	}
	if out, err := runStorage(t, args...); err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := startFormatted(t, ctx, overrides)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		got[f.Name] = f.MaxVersionLevel
	}
	if len(got) != 4 || got["metadata.version"] != 25 || got["group.version"] != 1 || got["eligible.leader.replicas.version"] != 1 || got["transaction.version"] != 2 {
		t.Fatalf("finalized features %v, want metadata.version=25 group.version=1 eligible.leader.replicas.version=1 transaction.version=2 and no share.version", got)
	}
}

// startFormatted starts a node on directories `storage format` prepared,
// with the given overrides, and returns a client of it; the node and the
// client stop when the test ends.
func startFormatted(t *testing.T, ctx context.Context, overrides []string) *kgo.Client {
	t.Helper()
	props, err := loadProperties("", overrides)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _, err := config.Load(props)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.Addr("PLAINTEXT").String()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}
