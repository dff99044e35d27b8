package metrics

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// HTTPServer is the gregor.http.listen listener: /metrics for Prometheus,
// /healthz (the process serves) and /readyz (ready reports why not).
type HTTPServer struct {
	srv    *http.Server
	ln     net.Listener
	logger *slog.Logger
	wg     sync.WaitGroup
}

// ListenHTTP binds addr and serves until Shutdown. With tlsConfig it
// serves HTTPS only (a plain HTTP request fails its handshake). ready
// returns nil when the node is ready (a broker unfenced, a controller in
// the quorum). extra, if not nil, mounts more handlers (the web console) on
// the mux.
func ListenHTTP(addr string, tlsConfig *tls.Config, r *Registry, ready func() error, extra func(mux *http.ServeMux), logger *slog.Logger) (*HTTPServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gregor.http.listen=%s: %w", addr, err)
	}
	scheme := "http"
	if tlsConfig != nil {
		// net/http runs each connection's handshake under the server's
		// ReadHeaderTimeout, and sets Request.TLS.
		ln = tls.NewListener(ln, tlsConfig)
		scheme = "https"
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{ErrorLog: nil}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	if extra != nil {
		extra(mux)
	}
	h := &HTTPServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, logger: logger}
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		if err := h.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("http listener stopped", "err", err)
		}
	}()
	logger.Info("listening", "component", "http", "addr", ln.Addr().String(), "scheme", scheme)
	return h, nil
}

// Addr is the bound address (useful with port 0).
func (h *HTTPServer) Addr() net.Addr { return h.ln.Addr() }

// Shutdown stops serving and waits.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	h.wg.Wait()
	return err
}
