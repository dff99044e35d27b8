package server

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"

	"gregor/internal/log"
)

// ensureFormatted checks every directory's meta.properties and writes the
// missing ones, so that the zero-config node formats itself on first start
// (as kafka-storage.sh format would) and keeps its cluster id afterwards.
// Directories that disagree on the cluster id or node id refuse to start,
// as Kafka does: they belong to another cluster or node.
func ensureFormatted(dirs []string, nodeID int32, logger *slog.Logger) (string, error) {
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
