package server

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"gregor/internal/config"
)

// TestStartAndStopLogLines: the start-up line names each directory once
// (metadata.log.dir defaults to the first of log.dirs), and a normal stop,
// whose controlled shutdown ends with the controller fencing the broker,
// logs that fencing as the expected step it is, not as a warning.
func TestStartAndStopLogLines(t *testing.T) {
	dir := t.TempDir()
	cfg, _, err := config.Load(map[string]string{
		"listeners":                "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters": "1@127.0.0.1:0",
		"log.dirs":                 dir,
		"gregor.http.listen":       "",
	})
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	out := logs.String()
	var start string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, `msg="starting gregor"`) {
			start = line
		}
	}
	if !strings.Contains(start, "log.dirs=["+dir+"] metadata.log.dir="+dir) || strings.Count(start, dir) != 2 {
		t.Errorf("start-up line %q, want log.dirs=[%s] metadata.log.dir=%s", start, dir, dir)
	}
	if !strings.Contains(out, `level=INFO msg="fenced by the controller for the controlled shutdown"`) {
		t.Errorf("no INFO line for the controlled shutdown's fencing; log:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "fenced") {
			t.Errorf("a normal shutdown warns: %s", line)
		}
	}
}
