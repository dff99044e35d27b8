package server

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gregor/internal/config"
)

// A zero-config node whose port another process holds says so and leaves
// its data directory unformatted (it used to format a new cluster, then
// fail to bind).
func TestSingleNodeWithPortTakenFormatsNothing(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "data")
	cfg, _, err := config.Load(map[string]string{
		"listeners":                "PLAINTEXT://" + taken.Addr().String() + ",CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 dir,
		"gregor.http.listen":       "127.0.0.1:0",
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	err = srv.Start(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = srv.Shutdown(ctx) // stops whatever did start
	if err == nil || !strings.Contains(err.Error(), taken.Addr().String()) || !strings.Contains(err.Error(), "another broker") {
		t.Fatalf("start with %s taken: %v", taken.Addr(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "meta.properties")); !os.IsNotExist(err) {
		entries, _ := os.ReadDir(dir)
		t.Fatalf("meta.properties after a failed start: %v (dir holds %v)", err, entries)
	}
}
