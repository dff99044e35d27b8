package server

import (
	"time"

	"gregor/internal/metadata"
	"gregor/internal/metrics"
	"gregor/internal/quota"
)

// newQuotaManagers returns the broker's client quota managers, measuring
// over quota.window.* (controller.quota.window.* for the controller
// mutation quota).
func (s *Server) newQuotaManagers() (*quota.Managers, error) {
	return quota.NewManagers(
		quota.Config{Samples: s.cfg.QuotaWindowNum, Window: time.Duration(s.cfg.QuotaWindowSizeSeconds) * time.Second},
		quota.Config{Samples: s.cfg.ControllerQuotaWindowNum, Window: time.Duration(s.cfg.ControllerQuotaWindowSizeSeconds) * time.Second},
	)
}

// clientQuotaPublisher keeps the broker's client quota managers in step
// with its metadata image (Kafka's DynamicClientQuotaPublisher): the
// image's client quotas, the first image's included, whenever a delta
// changes them.
type clientQuotaPublisher struct{ m *quota.Managers }

func (p clientQuotaPublisher) Publish(d *metadata.Delta, img *metadata.Image) {
	if d.ClientQuotasChanged() {
		p.m.Update(img.ClientQuotas)
	}
}

// quotaSensors reports the client quota sensors for a scrape.
func quotaSensors(m *quota.Managers) []metrics.ClientQuotaSensor {
	var out []metrics.ClientQuotaSensor
	for _, mgr := range m.All() {
		for _, sv := range mgr.Sensors() {
			out = append(out, metrics.ClientQuotaSensor{
				Type: mgr.Type().String(), User: sv.Tags.SanitizedUser(), ClientID: sv.Tags.ClientID,
				Rate: sv.Rate, ThrottleTime: sv.ThrottleTime,
			})
		}
	}
	return out
}
