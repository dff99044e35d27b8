package share

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseISODuration parses the ISO 8601 duration of share.auto.offset.reset's
// by_duration (Java's Duration.parse: PnDTnHnMn.nS, days, hours, minutes
// and seconds, the seconds possibly fractional). Negative durations are
// refused, as Kafka refuses them.
func ParseISODuration(s string) (time.Duration, error) {
	rest, ok := strings.CutPrefix(strings.ToUpper(s), "P")
	if !ok || rest == "" {
		return 0, fmt.Errorf("duration %q: not PnDTnHnMn.nS", s)
	}
	var total time.Duration
	inTime := false
	units := 0
	for rest != "" {
		if rest[0] == 'T' {
			if inTime {
				return 0, fmt.Errorf("duration %q: two T", s)
			}
			inTime, rest = true, rest[1:]
			if rest == "" {
				return 0, fmt.Errorf("duration %q: nothing after T", s)
			}
			continue
		}
		i := strings.IndexAny(rest, "DHMS")
		if i <= 0 {
			return 0, fmt.Errorf("duration %q: not PnDTnHnMn.nS", s)
		}
		num, unit := rest[:i], rest[i]
		rest = rest[i+1:]
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || v < 0 || strings.HasPrefix(num, "+") {
			return 0, fmt.Errorf("duration %q: %q is not a non-negative number", s, num)
		}
		if unit != 'S' && strings.Contains(num, ".") {
			return 0, fmt.Errorf("duration %q: only seconds may be fractional", s)
		}
		var per time.Duration
		switch {
		case unit == 'D' && !inTime:
			per = 24 * time.Hour
		case unit == 'H' && inTime:
			per = time.Hour
		case unit == 'M' && inTime:
			per = time.Minute
		case unit == 'S' && inTime:
			per = time.Second
		default:
			return 0, fmt.Errorf("duration %q: unit %c out of place", s, unit)
		}
		total += time.Duration(v * float64(per))
		units++
	}
	if units == 0 {
		return 0, fmt.Errorf("duration %q: no value", s)
	}
	return total, nil
}
