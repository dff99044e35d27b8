package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

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

	out, err := runStorage(t, append(format,
		"--add-scram", "SCRAM-SHA-256=[name=alice,password=alice-secret]",
		"-S", `SCRAM-SHA-512=[name=bob,iterations=8192,salt="N3E=",saltedpassword="YCE="]`)...)
	if err != nil {
		t.Fatalf("format: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "bootstrap.checkpoint")); err != nil {
		t.Fatalf("no bootstrap.checkpoint: %v", err)
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
