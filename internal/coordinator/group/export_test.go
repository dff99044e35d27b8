package group

import "gregor/internal/coordinator"

var partitionFor = coordinator.PartitionFor
