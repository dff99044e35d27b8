package network

import (
	"io"
	"net"
	"testing"
)

// loopbackPair returns the two ends of a loopback TCP connection and a
// channel that receives the byte count once the reader saw EOF.
func loopbackPair(b *testing.B) (*net.TCPConn, chan int64) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- -1
			return
		}
		defer c.Close()
		n, _ := io.CopyBuffer(io.Discard, c, make([]byte, 128<<10))
		got <- n
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	return c.(*net.TCPConn), got
}

// BenchmarkSendfile sends 1 MiB ranges of a 64 MiB file (in the page cache)
// to a loopback socket with sendfile, the Fetch path. Compare with
// BenchmarkLoopbackWrite, the same bytes written from memory (physbench
// tcp's limit), in the same run.
func BenchmarkSendfile(b *testing.B) {
	const fileSize, chunk = 64 << 20, 1 << 20
	f := writeTestFile(b, fileSize)
	defer f.Close()
	c, got := loopbackPair(b)
	rc, err := c.SyscallConn()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(chunk)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := FileRange{File: f, Offset: int64(i%(fileSize/chunk)) * chunk, Size: chunk}
		if _, err := sendfile(rc, r); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	if n := <-got; n != int64(b.N)*chunk {
		b.Fatalf("reader got %d bytes, sent %d", n, int64(b.N)*chunk)
	}
	b.StopTimer()
	c.Close()
}

// BenchmarkCopyRange is the copying alternative: pread into memory, then
// write (what a fetch costs without sendfile).
func BenchmarkCopyRange(b *testing.B) {
	const fileSize, chunk = 64 << 20, 1 << 20
	f := writeTestFile(b, fileSize)
	defer f.Close()
	c, got := loopbackPair(b)
	buf := make([]byte, chunk)
	b.SetBytes(chunk)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.ReadAt(buf, int64(i%(fileSize/chunk))*chunk); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	<-got
	b.StopTimer()
	c.Close()
}

// BenchmarkLoopbackWrite is the loopback limit: 1 MiB writes from memory,
// as physbench tcp measures it.
func BenchmarkLoopbackWrite(b *testing.B) {
	c, got := loopbackPair(b)
	buf := make([]byte, 1<<20)
	b.SetBytes(int64(len(buf)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.CloseWrite()
	<-got
	b.StopTimer()
	c.Close()
}
