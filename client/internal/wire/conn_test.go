package wire

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// FuzzDecode feeds response bodies from outside to the decoder: it must
// return an error, never panic, for whatever a broker sends.
func FuzzDecode(f *testing.F) {
	f.Add(int16(0), int16(9), []byte{0, 0, 0, 0, 0})
	f.Add(int16(3), int16(12), []byte{1, 2, 3})
	f.Add(int16(18), int16(3), []byte{0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, key, version int16, body []byte) {
		req := kmsg.RequestForKey(key)
		if req == nil {
			return
		}
		if version < 0 || version > req.MaxVersion() {
			return
		}
		req.SetVersion(version)
		_, _ = decode(req, body)
	})
}

// TestPipelinedInOrderAndTimeout sends several requests without waiting:
// their callbacks run in send order; a request kfake never answers closes
// the connection at its timeout and fails what is pending.
func TestPipelinedInOrderAndTimeout(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "t"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cn, err := Dial(ctx, nil, c.ListenAddrs()[0], "test")
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()

	got := make(chan int, 10)
	for i := range 10 {
		cn.DoAsync(kmsg.NewPtrMetadataRequest(), false, time.Minute, func(resp kmsg.Response, err error) {
			if err != nil {
				t.Errorf("request %d: %v", i, err)
			}
			got <- i
		})
	}
	for want := range 10 {
		if i := <-got; i != want {
			t.Fatalf("callback %d ran in place of %d", i, want)
		}
	}

	c.ControlKey(int16(kmsg.Metadata), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return nil, nil, true // never answered
	})
	failed := make(chan error, 1)
	cn.DoAsync(kmsg.NewPtrMetadataRequest(), false, 200*time.Millisecond, func(_ kmsg.Response, err error) { failed <- err })
	if err := <-failed; !errors.Is(err, ErrClosed) {
		t.Fatalf("unanswered request: %v, want ErrClosed", err)
	}
	if !cn.Closed() {
		t.Fatal("connection still open after a request timed out")
	}
	if _, err := cn.Do(ctx, kmsg.NewPtrMetadataRequest(), false); !errors.Is(err, ErrClosed) {
		t.Fatalf("request on the closed connection: %v", err)
	}
}

// TestDialFailure is a wrapped error naming the address.
func TestDialFailure(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := Dial(context.Background(), nil, addr, "x"); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}
