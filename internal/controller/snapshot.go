package controller

import "gregor/internal/metadata"

// SnapshotRecords is the controller's side of a metadata snapshot: the
// records of its image, encoded, when the image is exactly as of endOffset
// (the offset after the last batch it handled). The quorum stores them as
// they are; it never reads the controller's state itself. It is called on
// the quorum's goroutine right after the controller handled a batch, so the
// image cannot move under it.
func (c *Controller) SnapshotRecords(endOffset int64) (values [][]byte, ok bool) {
	img := c.Image()
	if img == nil || img.Offset+1 != endOffset {
		return nil, false
	}
	return metadata.EncodeAll(img.Records()), true
}
