//go:build e2e

// Package test holds the end-to-end suites: real gregor processes on real
// sockets and files, driven by franz-go and third-party clients.
package test

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"gregor/test/gregorbin"
)

// gregorBin is the binary built once for the whole package by TestMain, or
// the prebuilt one GREGOR_BENCH_BIN names (to measure another commit's
// binary with this commit's suites and benchmarks).
var gregorBin string

func TestMain(m *testing.M) { os.Exit(gregorbin.Main(m.Run, &gregorBin)) }

// broker is one gregor process started by a test.
type broker struct {
	t       *testing.T
	bin     string // the gregor binary; empty: gregorBin
	dataDir string
	port    int
	// ctrlPort is the controller listener's port (chosen at each start).
	ctrlPort int
	args     []string // --override key=value settings
	flags    []string // other process flags, e.g. --log-level debug
	cmd      *exec.Cmd
	logPath  string
	exited   chan struct{}
}

// startBroker starts gregor on a free port with a fresh data dir.
func startBroker(t *testing.T, extra ...string) *broker {
	t.Helper()
	return startBrokerFlags(t, nil, extra...)
}

// startBrokerFlags is startBroker with extra process flags (not overrides),
// such as "--log-level", "debug".
func startBrokerFlags(t *testing.T, flags []string, extra ...string) *broker {
	t.Helper()
	b := &broker{t: t, dataDir: t.TempDir(), port: freePort(t), args: extra, flags: flags}
	b.start()
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *broker) addr() string { return fmt.Sprintf("127.0.0.1:%d", b.port) }

func (b *broker) start() {
	b.t.Helper()
	ctrlPort := freePort(b.t)
	b.ctrlPort = ctrlPort
	args := []string{"server",
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", b.port, ctrlPort),
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrlPort),
		"--override", "log.dirs=" + b.dataDir,
		"--override", "gregor.http.listen=", // off: a port-0 bind could take a port freePort chose
	}
	for _, a := range b.args {
		args = append(args, "--override", a)
	}
	args = append(args, b.flags...)
	b.logPath = filepath.Join(b.t.TempDir(), "gregor.log")
	logFile, err := os.Create(b.logPath)
	if err != nil {
		b.t.Fatal(err)
	}
	b.cmd = exec.Command(cmp.Or(b.bin, gregorBin), args...)
	b.cmd.Stdout, b.cmd.Stderr = logFile, logFile
	if err := b.cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.exited = make(chan struct{})
	go func() {
		b.cmd.Wait()
		logFile.Close()
		close(b.exited)
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", b.addr(), time.Second)
		if err == nil {
			c.Close()
			return
		}
		select {
		case <-b.exited:
			b.t.Fatalf("gregor exited during start-up (%v):\n%s", b.cmd.ProcessState, b.log())
		default:
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("gregor did not listen on %s within 30s:\n%s", b.addr(), b.log())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit (status 0).
func (b *broker) stop() {
	b.t.Helper()
	if b.cmd == nil {
		return
	}
	select {
	case <-b.exited:
	default:
		b.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-b.exited:
		case <-time.After(60 * time.Second):
			b.cmd.Process.Kill()
			<-b.exited
			b.t.Errorf("gregor did not stop within 60s of SIGTERM:\n%s", b.log())
		}
	}
	if code := b.cmd.ProcessState.ExitCode(); code != 0 && !b.killed() {
		b.t.Errorf("gregor exited with %d:\n%s", code, b.log())
	}
	b.cmd = nil
}

func (b *broker) killed() bool {
	ws, ok := b.cmd.ProcessState.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// kill9 kills the process without any chance to flush.
func (b *broker) kill9() {
	b.t.Helper()
	b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

// restart stops (or has been killed) and starts again on the same data dir and port.
func (b *broker) restart() {
	b.t.Helper()
	b.stop()
	b.start()
}

func (b *broker) log() string {
	data, _ := os.ReadFile(b.logPath)
	s := string(data)
	if len(s) > 8000 {
		s = "...\n" + s[len(s)-8000:]
	}
	return s
}

// handedOut are the ports freePort returned in this test binary: the
// kernel may hand a just-closed port out again, and two listeners of one
// node given the same port fail its start-up.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort returns a loopback port that is free now and that no earlier
// call returned.
func freePort(t *testing.T) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	for {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
}

// run runs an external command with a deadline and returns its output.
func run(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
