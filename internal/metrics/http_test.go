package metrics

import (
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestListenHTTPS serves the listener with a TLS configuration: a client
// trusting the certificate reads /healthz and /metrics, a plain HTTP
// request is refused.
func TestListenHTTPS(t *testing.T) {
	// httptest's built-in certificate (for 127.0.0.1) and a client trusting it.
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert, client := ts.TLS.Certificates, ts.Client()
	ts.Close()
	defer client.CloseIdleConnections()

	h, err := ListenHTTP("127.0.0.1:0", &tls.Config{Certificates: cert}, New(nil), func() error { return nil }, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := h.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	}()
	get := func(c *http.Client, url string) (int, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	base := "https://" + h.Addr().String()
	if status, body := get(client, base+"/healthz"); status != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz over TLS: %d %q", status, body)
	}
	if status, body := get(client, base+"/metrics"); status != http.StatusOK || !strings.Contains(body, "go_goroutines") {
		t.Errorf("GET /metrics over TLS: %d", status)
	}
	plain := &http.Client{Transport: &http.Transport{}}
	defer plain.CloseIdleConnections()
	if status, body := get(plain, "http://"+h.Addr().String()+"/healthz"); status != http.StatusBadRequest || !strings.Contains(body, "HTTPS") {
		t.Errorf("GET /healthz over plain HTTP: %d %q, want 400 (an HTTP request to an HTTPS server)", status, body)
	}
}
