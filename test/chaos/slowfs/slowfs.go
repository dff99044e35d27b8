// Package slowfs is the fault suite's slow disk: a FUSE loopback of a
// real directory whose writes, fsyncs and page-cache-missing reads can be
// made to take a chosen time, switched at run time. This kernel has no
// device-mapper (no dm-delay) and cgroup v1 blkio does not throttle
// buffered writes, so the delay is put in the one place every I/O of a
// FUSE file passes: its server, which runs in the test process.
//
// Without a writeback cache (not asked for) FUSE is write-through: every
// write(2), and every dirty page of a shared mmap when the kernel writes
// it back, reaches the server as a WRITE; fsync(2) as an FSYNC; a read
// as a READ only when it misses the page cache. Those three wait. Open,
// lookup, rename, truncate and close do not: a slow disk's metadata
// operations are slow too, but the broker's hot paths are append, flush
// and read.
package slowfs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted slow loopback.
type FS struct {
	Mountpoint string
	server     *fuse.Server
	disk       *disk

	unmountOnce sync.Once
	unmountErr  error
}

// Mount serves a loopback of backing at mountpoint (both existing
// directories), with no latency. It mounts with mount(2) itself, so it
// needs root but no fusermount.
func Mount(backing, mountpoint string) (*FS, error) {
	root, err := fs.NewLoopbackRoot(backing)
	if err != nil {
		return nil, fmt.Errorf("slowfs: loopback of %s: %w", backing, err)
	}
	d := &disk{}
	second := time.Second
	server, err := fs.Mount(mountpoint, &slowNode{LoopbackNode: root.(*fs.LoopbackNode), disk: d}, &fs.Options{
		MountOptions: fuse.MountOptions{
			DirectMountStrict: true,
			FsName:            backing,
			Name:              "slowfs",
		},
		EntryTimeout: &second,
		AttrTimeout:  &second,
	})
	if err != nil {
		return nil, fmt.Errorf("slowfs: mount %s on %s: %w", backing, mountpoint, err)
	}
	return &FS{Mountpoint: mountpoint, server: server, disk: d}, nil
}

// SetLatency makes every write, fsync and page-cache-missing read from
// now on take d (0: full speed).
func (f *FS) SetLatency(d time.Duration) { f.disk.latency.Store(int64(d)) }

// Latency is the current latency.
func (f *FS) Latency() time.Duration { return time.Duration(f.disk.latency.Load()) }

// Waited is how many I/Os have waited for a latency since the mount: the
// evidence that a slow disk was used while it was slow.
func (f *FS) Waited() int64 { return f.disk.waited.Load() }

// Unmount turns the latency off, unmounts and waits for the server to
// stop. If the mount is busy (a process still has a file open) it is
// detached lazily instead, and the server stops when the last file is
// closed; Unmount waits up to 10 s for that. Later calls return the
// first one's answer.
func (f *FS) Unmount() error {
	f.unmountOnce.Do(func() { f.unmountErr = f.unmount() })
	return f.unmountErr
}

func (f *FS) unmount() error {
	f.SetLatency(0)
	err := f.server.Unmount()
	if err == nil {
		return nil
	}
	if lerr := syscall.Unmount(f.Mountpoint, syscall.MNT_DETACH); lerr != nil {
		return fmt.Errorf("slowfs: unmount %s: %w (lazily: %w)", f.Mountpoint, err, lerr)
	}
	stopped := make(chan struct{})
	go func() {
		f.server.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-time.After(10 * time.Second):
		return errors.New("slowfs: " + f.Mountpoint + " detached lazily, but still in use after 10s")
	}
}

// disk is the latency and the queue of I/Os waiting for it. A slow disk
// does one I/O at a time: while the latency is on, I/Os queue behind
// each other (so a broker's throughput on the dir drops to 1/latency
// I/Os a second, not only its latency rising). With the latency off
// nothing queues.
type disk struct {
	latency atomic.Int64 // time.Duration
	queue   sync.Mutex
	waited  atomic.Int64
}

func (d *disk) io() {
	if d.latency.Load() == 0 {
		return
	}
	d.queue.Lock()
	defer d.queue.Unlock()
	// Read again: I/Os queued when the latency is turned off go at once.
	if latency := time.Duration(d.latency.Load()); latency > 0 {
		d.waited.Add(1)
		time.Sleep(latency)
	}
}

// slowNode is a loopback node whose files are slowFiles. WrapChild makes
// every node under the root one too.
type slowNode struct {
	*fs.LoopbackNode
	disk *disk
}

var (
	_ fs.NodeWrapChilder = (*slowNode)(nil)
	_ fs.NodeOpener      = (*slowNode)(nil)
	_ fs.NodeCreater     = (*slowNode)(nil)
)

func (n *slowNode) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &slowNode{LoopbackNode: ops.(*fs.LoopbackNode), disk: n.disk}
}

func (n *slowNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	return &slowFile{LoopbackFile: fh.(*fs.LoopbackFile), disk: n.disk}, fuseFlags, 0
}

func (n *slowNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	inode, fh, fuseFlags, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	return inode, &slowFile{LoopbackFile: fh.(*fs.LoopbackFile), disk: n.disk}, fuseFlags, 0
}

// slowFile is a loopback file whose writes, fsyncs and reads wait.
type slowFile struct {
	*fs.LoopbackFile
	disk *disk
}

var (
	_ fs.FileWriter          = (*slowFile)(nil)
	_ fs.FileFsyncer         = (*slowFile)(nil)
	_ fs.FileReader          = (*slowFile)(nil)
	_ fs.FilePassthroughFder = (*slowFile)(nil)
)

func (f *slowFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f.disk.io()
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *slowFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f.disk.io()
	return f.LoopbackFile.Fsync(ctx, flags)
}

func (f *slowFile) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f.disk.io()
	return f.LoopbackFile.Read(ctx, buf, off)
}

// PassthroughFd declines FUSE passthrough, which the loopback file would
// offer and a root server gets: the kernel would then read and write the
// backing file itself, and nothing would wait.
func (f *slowFile) PassthroughFd() (int, bool) { return 0, false }
