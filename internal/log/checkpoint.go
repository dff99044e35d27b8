package log

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kafka's file names in a log.dir and a partition directory.
const (
	RecoveryPointCheckpointFile  = "recovery-point-offset-checkpoint"
	LogStartOffsetCheckpointFile = "log-start-offset-checkpoint"
	// HighWatermarkCheckpointFile holds each log's high watermark, so a
	// restarted replica does not start from its log start (Kafka's
	// replication-offset-checkpoint).
	HighWatermarkCheckpointFile = "replication-offset-checkpoint"
	MetaPropertiesFile          = "meta.properties"
	PartitionMetadataFile       = "partition.metadata"
)

// writeFileAtomic is WriteFileAtomic with tmp = path + ".tmp".
func writeFileAtomic(path string, data []byte) error {
	return WriteFileAtomic(path, path+".tmp", data)
}

// WriteFileAtomic replaces path with data so that a crash leaves either the
// old or the new content: write tmp, fsync it, rename it over path, fsync
// the directory (Kafka's Utils.atomicMoveWithFallback path). A failed
// write removes tmp.
func WriteFileAtomic(path, tmp string, data []byte) error {
	return replaceFile(path, tmp, data, true)
}

// replaceFile is WriteFileAtomic, and without sync the same write and
// rename with no fsync: for a caller that has them done later (the leader
// epoch checkpoint, Log.markEpochsDirty). A crash before then leaves the
// old file, or a torn one.
func replaceFile(path, tmp string, data []byte, sync bool) error {
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	_, err = f.Write(data)
	if err == nil && sync {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if !sync {
		return nil
	}
	return syncDir(filepath.Dir(path))
}

// writeCheckpoint writes Kafka's offset checkpoint format: a version line
// (0), a count line, then one "topic partition offset" line per entry.
func writeCheckpoint(path string, offsets map[TopicPartition]int64) error {
	tps := make([]TopicPartition, 0, len(offsets))
	for tp := range offsets {
		tps = append(tps, tp)
	}
	slices.SortFunc(tps, func(a, b TopicPartition) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "0\n%d\n", len(tps))
	for _, tp := range tps {
		fmt.Fprintf(&buf, "%s %d %d\n", tp.Topic, tp.Partition, offsets[tp])
	}
	return writeFileAtomic(path, buf.Bytes())
}

// readCheckpoint reads an offset checkpoint file; a missing file is empty.
func readCheckpoint(path string) (map[TopicPartition]int64, error) {
	entries, err := readCheckpointEntries(path, 3)
	if errors.Is(err, os.ErrNotExist) {
		return map[TopicPartition]int64{}, nil
	}
	if err != nil {
		return nil, err
	}
	offsets := make(map[TopicPartition]int64, len(entries))
	for _, f := range entries {
		p, err1 := strconv.ParseInt(f[1], 10, 32)
		off, err2 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("malformed checkpoint %s: bad entry %q", path, strings.Join(f, " "))
		}
		offsets[TopicPartition{Topic: f[0], Partition: int32(p)}] = off
	}
	return offsets, nil
}

// readCheckpointEntries reads a file in Kafka's checkpoint format (Kafka's
// CheckpointFile): a version line (0), a count line, then exactly count
// entries of fields space-separated fields each. A missing file is an error
// matching os.ErrNotExist; anything else unexpected is a malformed file.
func readCheckpointEntries(path string, fields int) ([][]string, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, fmt.Errorf("read checkpoint: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	line := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		return sc.Text(), true
	}
	malformed := func(what string) error {
		return fmt.Errorf("malformed checkpoint %s: %s", path, what)
	}
	v, ok := line()
	if !ok {
		return nil, malformed("no version line")
	}
	if v != "0" {
		return nil, malformed("unrecognized version " + strconv.Quote(v))
	}
	c, ok := line()
	if !ok {
		return nil, malformed("no count line")
	}
	count, err := strconv.Atoi(c)
	if err != nil || count < 0 {
		return nil, malformed("bad count " + strconv.Quote(c))
	}
	entries := make([][]string, 0, min(count, 1<<16))
	for i := 0; i < count; i++ {
		l, ok := line()
		if !ok {
			return nil, malformed(fmt.Sprintf("expected %d entries, found %d", count, i))
		}
		f := strings.Fields(l)
		if len(f) != fields {
			return nil, malformed("bad entry " + strconv.Quote(l))
		}
		entries = append(entries, f)
	}
	if l, ok := line(); ok && strings.TrimSpace(l) != "" {
		return nil, malformed("entries after the counted ones")
	}
	return entries, nil
}

// formatTopicID renders a topic id as Kafka's Uuid.toString: URL-safe base64
// without padding.
func formatTopicID(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func parseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// writePartitionMetadata writes partition.metadata as Kafka's
// PartitionMetadataFile: "version: 0\ntopic_id: <id>".
func writePartitionMetadata(dir string, topicID [16]byte) error {
	return writeFileAtomic(filepath.Join(dir, PartitionMetadataFile),
		[]byte("version: 0\ntopic_id: "+formatTopicID(topicID)))
}

// readPartitionMetadata reads the topic id from partition.metadata.
func readPartitionMetadata(dir string) ([16]byte, error) {
	var id [16]byte
	data, err := readFile(filepath.Join(dir, PartitionMetadataFile))
	if err != nil {
		return id, fmt.Errorf("read partition metadata: %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) < 2 {
		return id, fmt.Errorf("malformed %s in %s", PartitionMetadataFile, dir)
	}
	version, ok1 := strings.CutPrefix(strings.TrimSpace(lines[0]), "version:")
	topicID, ok2 := strings.CutPrefix(strings.TrimSpace(lines[1]), "topic_id:")
	if !ok1 || !ok2 || strings.TrimSpace(version) != "0" {
		return id, fmt.Errorf("malformed %s in %s", PartitionMetadataFile, dir)
	}
	return parseTopicID(strings.TrimSpace(topicID))
}

// MetaProperties is a log.dir's meta.properties in KRaft's version 1 format.
type MetaProperties struct {
	Version     int
	ClusterID   string
	NodeID      int32
	DirectoryID string
}

// ReadMetaProperties reads <dir>/meta.properties (Java properties). A missing
// file is an error matching os.ErrNotExist.
func ReadMetaProperties(dir string) (MetaProperties, error) {
	var mp MetaProperties
	data, err := os.ReadFile(filepath.Join(dir, MetaPropertiesFile))
	if err != nil {
		return mp, fmt.Errorf("read meta.properties: %w", err)
	}
	props := parseProperties(string(data))
	v, err := strconv.Atoi(props["version"])
	if err != nil {
		return mp, fmt.Errorf("meta.properties in %s: bad version %q", dir, props["version"])
	}
	mp.Version = v
	mp.ClusterID = props["cluster.id"]
	mp.DirectoryID = props["directory.id"]
	if s, ok := props["node.id"]; ok {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil {
			return mp, fmt.Errorf("meta.properties in %s: bad node.id %q", dir, s)
		}
		mp.NodeID = int32(n)
	} else {
		mp.NodeID = -1
	}
	return mp, nil
}

// WriteMetaProperties writes <dir>/meta.properties atomically.
func WriteMetaProperties(dir string, mp MetaProperties) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write meta.properties: %w", err)
	}
	var buf bytes.Buffer
	buf.WriteString("#\n#Written by Gregor\n")
	if mp.ClusterID != "" {
		fmt.Fprintf(&buf, "cluster.id=%s\n", escapeProperty(mp.ClusterID))
	}
	if mp.DirectoryID != "" {
		fmt.Fprintf(&buf, "directory.id=%s\n", escapeProperty(mp.DirectoryID))
	}
	fmt.Fprintf(&buf, "node.id=%d\n", mp.NodeID)
	fmt.Fprintf(&buf, "version=%d\n", mp.Version)
	return writeFileAtomic(filepath.Join(dir, MetaPropertiesFile), buf.Bytes())
}

// parseProperties reads the Java properties subset Kafka writes: comments
// (# or !), key=value or key:value lines, backslash escapes.
func parseProperties(s string) map[string]string {
	props := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.TrimSuffix(line, "\r"))
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[unescapeProperty(line)] = ""
			continue
		}
		props[unescapeProperty(strings.TrimSpace(line[:i]))] = unescapeProperty(strings.TrimSpace(line[i+1:]))
	}
	return props
}

func escapeProperty(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "=", `\=`, ":", `\:`, "#", `\#`, "!", `\!`)
	return r.Replace(s)
}

func unescapeProperty(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
