package server

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/config"
	"gregor/internal/handlers"
	"gregor/internal/network"
	"gregor/test/fuzzgen"
)

// FuzzHandlers hands every request decoder and handler of both listeners
// outside bytes. The input's first byte picks the listener (even: broker,
// odd: controller) and how the rest is read: below 2, as a request frame
// (header and body, without the size prefix); from 2, as an API key, a
// version and a seed from which test/fuzzgen fills a request of that API
// with edge values (structure-aware: the request decodes, and the handler's
// own checks are what is tried). Either way the frame is decoded as the
// listener's connection would and handed to that listener's handlers of
// one in-process node. A handler may refuse anything; it must not panic.
// The seeds are a filled request of every served API key at its lowest and
// highest version, and four generated ones of each key.
func FuzzHandlers(f *testing.F) {
	srv := startFuzzServer(f)
	listeners := []*handlers.Handlers{srv.brokerHandlers, srv.ctrlHandlers}
	g := fuzzgen.New(1)
	for i, h := range listeners {
		for key := int16(0); key <= kmsg.MaxKey; key++ {
			minV, maxV, ok := h.VersionRange(key)
			if !ok {
				continue
			}
			for _, v := range []int16{minV, maxV} {
				if req := g.Request(key, v); req != nil {
					f.Add(append([]byte{byte(i)}, headerlessFrame(req, int32(key))...))
				}
			}
			for seed := byte(0); seed < 4; seed++ {
				f.Add([]byte{byte(2 + i), byte(key), seed, byte(key), seed, 2, 3})
			}
		}
	}
	var mu sync.Mutex // one request at a time: each finds the node as the last left it
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 1 {
			return
		}
		h := listeners[in[0]%2]
		frame := in[1:]
		if in[0]%4 >= 2 {
			if frame = generatedFrame(h, in[1:]); frame == nil {
				return
			}
		}
		req, err := network.DecodeRequest(frame, h.VersionRange)
		if err != nil {
			return
		}
		req.Listener, req.SecurityProtocol, req.Principal = "PLAINTEXT", "PLAINTEXT", auth.Anonymous
		req.ClientAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
		req.ReceivedAt = time.Now()
		// A long poll or a join waits at most this long: the
		// connection it came on has gone.
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		mu.Lock()
		defer mu.Unlock()
		resp, err := h.Handle(ctx, req)
		if resp == nil {
			return
		}
		// The response encodes, as the connection would send it.
		resp.SetVersion(req.Header.APIVersion)
		if fr, ok := resp.(network.FileResponse); ok {
			if err == nil {
				fr.AppendFrame(&network.Frame{})
			}
			fr.Release()
		} else if err == nil {
			resp.AppendTo(nil)
		}
	})
}

// startFuzzServer starts an in-process node (both roles, auto-created
// topics) for the whole fuzz run of this process.
func startFuzzServer(f *testing.F) *Server {
	cfg, _, err := config.Load(map[string]string{
		"listeners":                 "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0",
		"controller.quorum.voters":  "1@127.0.0.1:0",
		"log.dirs":                  f.TempDir(),
		"auto.create.topics.enable": "true",
		// Off: the fuzz coordinator and its workers each run a node.
		"gregor.http.listen": "",
	})
	if err != nil {
		f.Fatal(err)
	}
	srv, err := New(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		f.Fatal(err)
	}
	if err := srv.Start(context.Background()); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			f.Errorf("shutdown: %v", err)
		}
	})
	return srv
}

// generatedFrame returns a request frame that fuzzgen fills for the API
// key in[0] at the served version picked by in[1], seeded by the rest, or
// nil when the listener does not serve the key.
func generatedFrame(h *handlers.Handlers, in []byte) []byte {
	if len(in) < 2 {
		return nil
	}
	key := int16(in[0]) % (kmsg.MaxKey + 1)
	minV, maxV, ok := h.VersionRange(key)
	if !ok {
		return nil
	}
	var seed [8]byte
	copy(seed[:], in[2:])
	req := fuzzgen.New(binary.LittleEndian.Uint64(seed[:])).Request(key, minV+int16(in[1])%(maxV-minV+1))
	if req == nil {
		return nil
	}
	return headerlessFrame(req, 1)
}

// headerlessFrame is r as a request frame without its size prefix.
func headerlessFrame(r kmsg.Request, corr int32) []byte {
	b := kmsg.NewRequestFormatter(kmsg.FormatterClientID("fuzz")).AppendRequest(nil, r, corr)
	return b[4:]
}
