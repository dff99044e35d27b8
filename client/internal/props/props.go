// Package props reads Java .properties files, the form a Kafka client's
// configuration is usually kept in; the producer and consumer both accept
// one unchanged.
package props

import (
	"bufio"
	"fmt"
	"io"
	"strings"
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
