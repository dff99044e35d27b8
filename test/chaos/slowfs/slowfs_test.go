package slowfs

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// mount mounts a slow loopback of a new directory; it returns the FS and
// the backing directory. Cleanup unmounts (Unmount twice is harmless).
func mount(t *testing.T) (*FS, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting FUSE without fusermount needs root")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	dir := t.TempDir()
	backing, mountpoint := filepath.Join(dir, "backing"), filepath.Join(dir, "mnt")
	for _, d := range []string{backing, mountpoint} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	f, err := Mount(backing, mountpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, backing
}

// appendSynced appends count blocks to path, each with one write and one
// fsync (a broker's append then flush), and returns the time taken.
func appendSynced(t *testing.T, path string, block []byte, count int) time.Duration {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := time.Now()
	for range count {
		if _, err := f.Write(block); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start)
}

func TestLatencyAppliesToWriteFsyncAndUncachedRead(t *testing.T) {
	f, backing := mount(t)
	const latency = 40 * time.Millisecond
	const count = 5
	block := bytes.Repeat([]byte("gregor-slowfs-"), 300) // 4,200 bytes: one FUSE WRITE each
	path := filepath.Join(f.Mountpoint, "00000000000000000000.log")

	fast := appendSynced(t, path, block, count)
	f.SetLatency(latency)
	if f.Latency() != latency {
		t.Fatalf("Latency() = %v after SetLatency(%v)", f.Latency(), latency)
	}
	slow := appendSynced(t, path, block, count)
	if waited := f.Waited(); waited < 2*count {
		t.Errorf("%d I/Os waited for %d writes and fsyncs", waited, count)
	}
	// A write and an fsync per block, each waiting the latency.
	if want := 2 * count * latency; slow < want {
		t.Errorf("%d writes and fsyncs with %v latency took %v, want at least %v", count, latency, slow, want)
	}
	if fast*2 > slow {
		t.Errorf("without latency %v, with %v: want the slow run at least twice as long", fast, slow)
	}
	t.Logf("%d write+fsync: %v without latency, %v with %v", count, fast, slow, latency)

	// Opening the file drops its page cache (the loopback does not ask
	// to keep it), so this read misses and waits.
	start := time.Now()
	got, err := os.ReadFile(path)
	read := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if read < latency {
		t.Errorf("an uncached read with %v latency took %v", latency, read)
	}
	f.SetLatency(0)
	want := bytes.Repeat(block, 2*count)
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %d bytes through the mount, want %d", len(got), len(want))
	}
	onDisk, err := os.ReadFile(filepath.Join(backing, filepath.Base(path)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(onDisk, want) {
		t.Fatalf("backing file holds %d bytes, want %d", len(onDisk), len(want))
	}
}

// TestMmapReadWrite is what an .index or .timeindex does: a file grown
// with ftruncate, mapped shared read-write, written through the mapping.
// The bytes must reach the backing file and read back through the mount.
func TestMmapReadWrite(t *testing.T) {
	f, backing := mount(t)
	f.SetLatency(5 * time.Millisecond) // write-back of dirty pages goes through the delay too
	path := filepath.Join(f.Mountpoint, "00000000000000000000.index")
	file, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	const size = 3 * 4096
	if err := file.Truncate(size); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i * 7)
	}
	copy(m, want)
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m, want) {
		t.Fatal("the mapping does not read back what was written to it")
	}
	if err := unix.Munmap(m); err != nil {
		t.Fatal(err)
	}
	if err := file.Sync(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, filepath.Join(backing, filepath.Base(path))} {
		got, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s does not hold the bytes written through the mapping", p)
		}
	}
	// And the other way: a mapping of bytes written with write(2).
	m, err = unix.Mmap(int(file.Fd()), 0, size, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	if _, err := file.WriteAt([]byte("offset"), 4096); err != nil {
		t.Fatal(err)
	}
	if got := string(m[4096 : 4096+6]); got != "offset" {
		t.Errorf("a read-only mapping reads %q after a write(2) of %q", got, "offset")
	}
}

// TestSendfileAndCopy: a fetch response is sent with sendfile(2) from a
// segment to the socket; copy_file_range also goes through the server.
func TestSendfileAndCopy(t *testing.T) {
	f, _ := mount(t)
	f.SetLatency(5 * time.Millisecond)
	want := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	src := filepath.Join(f.Mountpoint, "segment.log")
	if err := os.WriteFile(src, want, 0o644); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	received := make(chan []byte, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			received <- nil
			return
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		received <- b
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	rc, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	var sendErr error
	werr := rc.Write(func(dst uintptr) bool {
		for off < int64(len(want)) {
			_, err := unix.Sendfile(int(dst), int(file.Fd()), &off, len(want)-int(off))
			switch {
			case err == unix.EAGAIN:
				return false
			case err == unix.EINTR:
				continue
			case err != nil:
				sendErr = err
				return true
			}
		}
		return true
	})
	conn.Close()
	if werr != nil || sendErr != nil {
		t.Fatalf("sendfile from the mount: %v %v", werr, sendErr)
	}
	if got := <-received; !bytes.Equal(got, want) {
		t.Fatalf("sendfile delivered %d bytes, want the file's %d", len(got), len(want))
	}

	// copy_file_range between two files on the mount (io.Copy uses it).
	dst, err := os.Create(filepath.Join(f.Mountpoint, "copy.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := file.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, file); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dst.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the copy holds %d bytes, want %d", len(got), len(want))
	}
}

// TestUnmountBusy: with a file still open, Unmount detaches lazily and
// returns once the file is closed.
func TestUnmountBusy(t *testing.T) {
	f, _ := mount(t)
	file, err := os.Create(filepath.Join(f.Mountpoint, "open"))
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() { file.Close() })
	if err := f.Unmount(); err != nil {
		t.Fatal(err)
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(f.Mountpoint, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == 0x65735546 { // FUSE_SUPER_MAGIC
		t.Errorf("%s is still a FUSE mount after Unmount", f.Mountpoint)
	}
}
