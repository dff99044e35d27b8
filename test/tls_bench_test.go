//go:build e2e

package test

// What TLS costs (issue "Encryption and authentication", performance): one
// broker with a PLAINTEXT and an SSL listener (a P-256 certificate made by
// openssl; Go's crypto/tls negotiates TLS 1.3 with AES-128-GCM on a CPU
// with AES-NI), and `gregor bench produce` then `gregor bench consume` of
// 1 KiB records run against each listener in turn, alternating, so that
// the machine's noise falls on both alike. Reported: records/s of each run
// and the SSL/PLAINTEXT ratio of the medians. Nothing is asserted on time.
//
// Skipped unless GREGOR_BENCH=1:
//
//	GREGOR_BENCH=1 go test -tags e2e -run TestTLSBench -v -timeout 20m ./test/
//
// GREGOR_BENCH_ROUNDS (default 3) alternations, GREGOR_BENCH_RECORDS
// (default 1000000) records produced per run (each consume run reads as
// many from the start of the topic).
//
// Measured 2026-12-01 on 2 shared cores (the client runs there too, and
// other engineers' tests were running), GREGOR_BENCH_RECORDS=500000:
//
//	records/s    produce (3 rounds)       consume (3 rounds)
//	PLAINTEXT    332k 341k 233k           473k 534k 427k
//	SSL          313k 257k 195k           291k 288k 294k
//	SSL/PLAINTEXT of the medians: produce 0.77, consume 0.62
//
// Consuming loses more than producing because a PLAINTEXT fetch sends the
// segment bytes with sendfile, while TLS must read them into the process
// and encrypt them (Kafka's SSL fetches lose zero-copy the same way), and
// the consumer decrypts them on the same two cores.

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"gregor/internal/auth/authtest"
)

type tlsBenchRun struct {
	RecordsPerSec float64 `json:"records_per_sec"`
}

func TestTLSBench(t *testing.T) {
	if os.Getenv("GREGOR_BENCH") != "1" {
		t.Skip("set GREGOR_BENCH=1 to run the TLS benchmark")
	}
	authtest.RequireOpenSSL(t)
	rounds, records := 3, 1000000
	if v, err := strconv.Atoi(os.Getenv("GREGOR_BENCH_ROUNDS")); err == nil && v > 0 {
		rounds = v
	}
	if v, err := strconv.Atoi(os.Getenv("GREGOR_BENCH_RECORDS")); err == nil && v > 0 {
		records = v
	}
	pki := authtest.NewPKI(t, t.TempDir())
	plain, ssl, ctrl := freePort(t), freePort(t), freePort(t)
	dir := t.TempDir()
	logFile, err := os.Create(filepath.Join(dir, "gregor.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(gregorBin, "server",
		"--override", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d", plain, ssl, ctrl),
		"--override", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT",
		"--override", "controller.listener.names=CONTROLLER",
		"--override", fmt.Sprintf("controller.quorum.voters=1@127.0.0.1:%d", ctrl),
		"--override", "log.dirs="+filepath.Join(dir, "data"),
		"--override", "gregor.http.listen=",
		"--override", "ssl.keystore.type=PEM",
		"--override", "ssl.keystore.location="+pki.Server.KeystorePEM,
		"--override", "ssl.key.password="+authtest.Password)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", plain), time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gregor did not listen: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	sslConfig := filepath.Join(dir, "ssl.properties")
	if err := os.WriteFile(sslConfig, []byte("security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location="+pki.CA.Cert+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	conn := map[string][]string{
		"PLAINTEXT": {"--bootstrap-server", fmt.Sprintf("127.0.0.1:%d", plain)},
		"SSL":       {"--bootstrap-server", fmt.Sprintf("127.0.0.1:%d", ssl), "--command-config", sslConfig},
	}
	gregor := func(args ...string) []byte {
		t.Helper()
		out, err := exec.Command(gregorBin, args...).Output()
		if err != nil {
			t.Fatalf("gregor %v: %v\n%s", args, err, out)
		}
		return out
	}
	results := map[string]map[string][]float64{"PLAINTEXT": {}, "SSL": {}}
	for r := range rounds {
		for _, listener := range []string{"PLAINTEXT", "SSL"} {
			topic := fmt.Sprintf("tls-bench-%d-%s", r, listener)
			gregor(append([]string{"topic", "create", topic, "--partitions", "3"}, conn["PLAINTEXT"]...)...)
			for _, kind := range []string{"produce", "consume"} {
				args := []string{"bench", kind, "--topic", topic, "--json"}
				if kind == "produce" {
					args = append(args, "--num-records", strconv.Itoa(records), "--record-size", "1024")
				} else {
					args = append(args, "--messages", strconv.Itoa(records))
				}
				var run tlsBenchRun
				if err := json.Unmarshal(gregor(append(args, conn[listener]...)...), &run); err != nil {
					t.Fatal(err)
				}
				results[listener][kind] = append(results[listener][kind], run.RecordsPerSec)
				t.Logf("round %d %-9s %-7s %8.0f records/s", r+1, listener, kind, run.RecordsPerSec)
			}
		}
	}
	median := func(v []float64) float64 {
		s := slices.Clone(v)
		slices.Sort(s)
		return s[len(s)/2]
	}
	for _, kind := range []string{"produce", "consume"} {
		p, s := median(results["PLAINTEXT"][kind]), median(results["SSL"][kind])
		t.Logf("%s, 1 KiB records: PLAINTEXT %.0f/s, SSL %.0f/s, SSL/PLAINTEXT %.2f", kind, p, s, s/p)
	}
}
