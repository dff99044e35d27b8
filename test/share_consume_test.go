//go:build e2e

package test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// TestShareConsumeKilled: a `gregor share-consume` killed -9 while it holds
// records it has not acknowledged: another member gets them, well before
// their lock (share.record.lock.duration.ms, 60 s here) would expire, as the
// broker releases a share session's records when its connection closes.
// Every record is printed by one of the two; none is lost.
func TestShareConsumeKilled(t *testing.T) {
	b := startBroker(t, "group.share.record.lock.duration.ms=60000")
	cli := func(timeout time.Duration, stdin string, args ...string) (string, error) {
		return run(t, timeout, stdin, gregorBin, append(args, "--bootstrap-server", b.addr())...)
	}
	if out, err := cli(30*time.Second, "", "topic", "create", "k", "--partitions", "1"); err != nil {
		t.Fatalf("topic create: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		out, err := cli(30*time.Second, "", "share-group", "reset-offsets", "g", "--topic", "k", "--to-earliest", "--execute")
		if err == nil {
			break
		}
		if !strings.Contains(out, "COORDINATOR") || time.Now().After(deadline) {
			t.Fatalf("share-group reset-offsets: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// 300 records of 1 KB: more than the victim's output buffer and the pipe
	// to the test hold, so a victim whose output is not read stops mid-batch.
	const n = 300
	var in strings.Builder
	pad := strings.Repeat("x", 1000)
	for i := range n {
		fmt.Fprintf(&in, "%04d-%s\n", i, pad)
	}
	if out, err := cli(60*time.Second, in.String(), "produce", "k"); err != nil {
		t.Fatalf("produce: %v\n%s", err, out)
	}

	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	victim := exec.Command(gregorBin, "share-consume", "k", "--group", "g", "--bootstrap-server", b.addr(),
		"--consumer-property", "max.poll.records=5", "--consumer-property", "share.acquire.mode=record_limit")
	victim.Stdout = pw
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	// Read its first 20 lines, then nothing: it blocks writing, holding the
	// records of the batch it is printing, unacknowledged.
	r := bufio.NewReader(pr)
	seen := map[string]int{}
	for range 20 {
		line, err := r.ReadString('\n')
		if err != nil {
			victim.Process.Kill()
			victim.Wait()
			t.Fatalf("victim output: %v", err)
		}
		seen[line[:4]]++
	}
	// Wait until the pipe is full (its 64 KiB are less than the 280 KB the
	// victim has left to write; full is when its fill stops growing): the
	// victim is then blocked mid-batch, holding records acquired and not
	// acknowledged, locked to it for 60 s. Kill it; what it wrote before
	// dying is still in the pipe.
	for last, deadline := -1, time.Now().Add(2*time.Minute); ; {
		fill := pipeFill(t, pr)
		if fill >= 32<<10 && fill == last {
			break
		}
		if time.Now().After(deadline) {
			victim.Process.Kill()
			victim.Wait()
			t.Fatalf("the victim's output pipe still fills (%d bytes)", fill)
		}
		last = fill
		time.Sleep(time.Second)
	}
	if err := victim.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	victim.Wait()
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	victimPrinted := 20
	for _, line := range strings.SplitAfter(string(rest), "\n") {
		if strings.HasSuffix(line, "\n") && len(line) > 4 {
			seen[line[:4]]++
			victimPrinted++
		}
	}

	// The other member ends 20 s after its last record: far sooner than the
	// 60 s lock, so it gets the victim's records only if the close released them.
	out, err := cli(3*time.Minute, "", "share-consume", "k", "--group", "g", "--timeout-ms", "20000")
	if err != nil {
		t.Fatalf("share-consume: %v\n%s", err, out)
	}
	otherPrinted := 0
	for _, line := range strings.Split(out, "\n") {
		if len(line) > 4 && line[4] == '-' {
			seen[line[:4]]++
			otherPrinted++
		}
	}
	for i := range n {
		if seen[fmt.Sprintf("%04d", i)] == 0 {
			t.Fatalf("record %d was printed by neither member (victim printed %d, the other %d)", i, victimPrinted, otherPrinted)
		}
	}
	t.Logf("victim printed %d before kill -9, the other member %d (%d printed twice: printed by the victim, not yet acknowledged)",
		victimPrinted, otherPrinted, victimPrinted+otherPrinted-n)
}

// pipeFill is how many bytes wait in the pipe f reads (FIONREAD).
func pipeFill(t *testing.T, f *os.File) int {
	t.Helper()
	sc, err := f.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int32
	var errno syscall.Errno
	if err := sc.Control(func(fd uintptr) {
		_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	}); err != nil {
		t.Fatal(err)
	}
	if errno != 0 {
		t.Fatalf("FIONREAD: %v", errno)
	}
	return int(n)
}
