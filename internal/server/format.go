package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"

	"gregor/internal/log"
)

// ensureFormatted checks every directory's meta.properties and writes the
// missing ones, so that the zero-config node formats itself on first start
// (as kafka-storage.sh format would) and keeps its cluster id afterwards.
// Directories that disagree on the cluster id or node id refuse to start,
// as Kafka does: they belong to another cluster or node.
//
// autoFormat allows formatting a new cluster (the zero-config single node);
// otherwise a node whose directories are all unformatted refuses to start,
// since nodes of one cluster must share the cluster id that
// `gregor storage format` writes. beforeFormat (nil: none) runs before a
// new cluster is formatted; its error stops the start with nothing
// written.
func ensureFormatted(dirs []string, nodeID int32, autoFormat bool, beforeFormat func() error, logger *slog.Logger) (string, error) {
	clusterID := ""
	var missing []string
	seen := map[string]bool{}
	for _, dir := range dirs {
		if seen[dir] {
			continue
		}
		seen[dir] = true
		mp, err := log.ReadMetaProperties(dir)
		if errors.Is(err, fs.ErrNotExist) {
			missing = append(missing, dir)
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read meta.properties in %s: %w", dir, err)
		}
		if mp.NodeID != nodeID {
			return "", fmt.Errorf("%s/meta.properties has node.id=%d but the configuration says node.id=%d", dir, mp.NodeID, nodeID)
		}
		if clusterID != "" && mp.ClusterID != clusterID {
			return "", fmt.Errorf("%s/meta.properties has cluster.id=%s, another log dir has %s: the directories belong to different clusters", dir, mp.ClusterID, clusterID)
		}
		clusterID = mp.ClusterID
	}
	if clusterID == "" {
		if !autoFormat {
			return "", fmt.Errorf("no meta.properties in %v: format the storage of a multi-node cluster first with `gregor storage format --cluster-id <id> --config <file>` (one id for all nodes, from `gregor storage random-uuid`)", dirs)
		}
		if beforeFormat != nil {
			if err := beforeFormat(); err != nil {
				return "", err
			}
		}
		clusterID = RandomUUID()
		logger.Info("formatting a new cluster", "cluster.id", clusterID)
	}
	for _, dir := range missing {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", fmt.Errorf("create log dir: %w", err)
		}
		mp := log.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: nodeID, DirectoryID: RandomUUID()}
		if err := log.WriteMetaProperties(dir, mp); err != nil {
			return "", fmt.Errorf("format %s: %w", dir, err)
		}
	}
	return clusterID, nil
}

// Format writes meta.properties with clusterID into every directory, as
// `kafka-storage.sh format` does. A directory already formatted is an error
// unless ignoreFormatted, and then it must carry the same ids.
func Format(dirs []string, nodeID int32, clusterID string, ignoreFormatted bool) ([]string, error) {
	if err := ValidateClusterID(clusterID); err != nil {
		return nil, err
	}
	var formatted []string
	for _, dir := range dirs {
		mp, err := log.ReadMetaProperties(dir)
		switch {
		case err == nil:
			if !ignoreFormatted {
				return formatted, fmt.Errorf("log directory %s is already formatted (cluster.id=%s); use --ignore-formatted to skip it", dir, mp.ClusterID)
			}
			if mp.ClusterID != clusterID || mp.NodeID != nodeID {
				return formatted, fmt.Errorf("log directory %s is formatted for cluster.id=%s node.id=%d, not cluster.id=%s node.id=%d", dir, mp.ClusterID, mp.NodeID, clusterID, nodeID)
			}
			continue
		case !errors.Is(err, fs.ErrNotExist):
			return formatted, fmt.Errorf("read meta.properties in %s: %w", dir, err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return formatted, fmt.Errorf("create log dir: %w", err)
		}
		mp = log.MetaProperties{Version: 1, ClusterID: clusterID, NodeID: nodeID, DirectoryID: RandomUUID()}
		if err := log.WriteMetaProperties(dir, mp); err != nil {
			return formatted, fmt.Errorf("format %s: %w", dir, err)
		}
		formatted = append(formatted, dir)
	}
	return formatted, nil
}

// ValidateClusterID checks a cluster id is a Kafka UUID: 16 bytes in
// URL-safe base64 without padding.
func ValidateClusterID(id string) error {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != 16 {
		return fmt.Errorf("cluster id %q is not a valid UUID (22 characters of URL-safe base64, as `gregor storage random-uuid` prints)", id)
	}
	return nil
}

// RandomUUID returns a random Kafka UUID in its string form: 16 random
// bytes as URL-safe base64 without padding (Kafka's Uuid.toString). Like
// Kafka it never starts with '-', which command lines would take for a flag.
func RandomUUID() string {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			panic(fmt.Sprintf("crypto/rand failed: %v", err))
		}
		if s := base64.RawURLEncoding.EncodeToString(b[:]); s[0] != '-' {
			return s
		}
	}
}

// listenersFree checks that every fixed port the node will listen on is
// free, so that a zero-config node started next to another broker says so
// before it formats a new cluster it could never serve. Port 0 (any port)
// is skipped; the listeners themselves still report a port taken later.
func listenersFree(addrs []string) error {
	for _, addr := range addrs {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("cannot listen on %s (is another broker running?): %w", addr, err)
		}
		l.Close()
	}
	return nil
}
