// Package props reads Java .properties files, the form a Kafka client's
// configuration is usually kept in; the producer and consumer both accept
// one unchanged.
package props

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Parse reads a Java .properties file's key=value lines (also key: value;
// # and ! comments; backslash line continuations).
func Parse(r io.Reader) (map[string]string, error) {
	props := map[string]string{}
	sc := bufio.NewScanner(r)
	var pending string
	for sc.Scan() {
		line := strings.TrimLeft(sc.Text(), " \t\f")
		if pending == "" && (line == "" || line[0] == '#' || line[0] == '!') {
			continue
		}
		if strings.HasSuffix(line, `\`) && !strings.HasSuffix(line, `\\`) {
			pending += line[:len(line)-1]
			continue
		}
		line = pending + line
		pending = ""
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[strings.TrimSpace(line)] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read properties: %w", err)
	}
	return props, nil
}

// Values converts property values to Go values, collecting an error for
// each that does not parse, so a configuration reports all its mistakes at
// once.
type Values struct {
	Errs []error
}

// Millis reads a non-negative number of milliseconds into dst.
func (v *Values) Millis(key, val string, dst *time.Duration) {
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil || n < 0 {
		v.Errs = append(v.Errs, fmt.Errorf("%s: %q is not a non-negative number of milliseconds", key, val))
		return
	}
	*dst = time.Duration(n) * time.Millisecond
}

// Int reads a number in lo..hi; it returns 0 (and records an error) when
// the value is not one.
func (v *Values) Int(key, val string, lo, hi int64) int64 {
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil || n < lo || n > hi {
		v.Errs = append(v.Errs, fmt.Errorf("%s: %q is not a number in %d..%d", key, val, lo, hi))
		return 0
	}
	return n
}

// Bool reads true or false (any case) into dst.
func (v *Values) Bool(key, val string, dst *bool) {
	switch strings.ToLower(val) {
	case "true":
		*dst = true
	case "false":
		*dst = false
	default:
		v.Errs = append(v.Errs, fmt.Errorf("%s: %q is not true or false", key, val))
	}
}

// List splits a comma-separated list, dropping blanks (bootstrap.servers).
func List(val string) []string {
	var out []string
	for _, s := range strings.Split(val, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// JavaOnly reports whether key is a property every Java client (producer
// and consumer alike) takes that has no meaning for this Go client: Java
// class names, JMX and metrics reporting, socket buffers the OS sizes, and
// the tuning of Java's own network layer. A client accepts them, with no
// effect, so a Java client's file works unchanged.
func JavaOnly(key string) bool {
	switch key {
	case "interceptor.classes", "metric.reporters", "metrics.num.samples", "metrics.recording.level",
		"metrics.sample.window.ms", "auto.include.jmx.reporter", "enable.metrics.push",
		"send.buffer.bytes", "receive.buffer.bytes", "client.dns.lookup",
		"reconnect.backoff.ms", "reconnect.backoff.max.ms", "connections.max.idle.ms",
		"socket.connection.setup.timeout.ms", "socket.connection.setup.timeout.max.ms":
		return true
	}
	return false
}
