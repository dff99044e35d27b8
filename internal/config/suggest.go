package config

import (
	"sort"
	"strings"
)

// Suggestions for unknown configuration keys: an operator who types
// max.mesage.bytes, or gives a topic the broker's name for a setting
// (log.retention.ms instead of retention.ms), is told the key meant.

// SuggestTopicConfig returns the topic configuration an unknown name most
// likely meant, or "" when none is close: the topic key whose broker
// synonym it is, else the nearest topic key by edit distance.
func SuggestTopicConfig(name string) string {
	keys := make([]string, len(topicDefList))
	for i, d := range topicDefList {
		if containsFold(d.BrokerSynonyms, name) {
			return d.Name
		}
		keys[i] = d.Name
	}
	return nearest(name, keys)
}

// SuggestBrokerConfig returns the broker configuration an unknown name most
// likely meant, or "": the broker synonym of a topic key (retention.ms
// given to a broker means log.retention.ms), else the nearest broker key by
// edit distance. A listener override (listener.name.<listener>.<key>)
// gets its key corrected under the same prefix.
func SuggestBrokerConfig(name string) string {
	if rest, ok := strings.CutPrefix(name, "listener.name."); ok {
		if listener, key, ok := strings.Cut(rest, "."); ok {
			if s := SuggestBrokerConfig(key); s != "" {
				return "listener.name." + listener + "." + s
			}
			return ""
		}
	}
	if d, ok := TopicDef(strings.ToLower(name)); ok && len(d.BrokerSynonyms) > 0 {
		if _, known := BrokerDef(d.BrokerSynonyms[0]); known {
			return d.BrokerSynonyms[0]
		}
	}
	keys := make([]string, len(brokerDefList))
	for i, d := range brokerDefList {
		keys[i] = d.Name
	}
	return nearest(name, keys)
}

// didYouMean is the suffix of an unknown-key message: " (did you mean
// KEY?)", or "" without a suggestion.
func didYouMean(suggestion string) string {
	if suggestion == "" {
		return ""
	}
	return " (did you mean " + suggestion + "?)"
}

// nearest returns the key closest to name by edit distance (ignoring
// case), if close enough to be a slip: at most a quarter of the name's
// length and never more than 4 edits, so that an unrelated name gets no
// suggestion. Ties go to the alphabetically first key.
func nearest(name string, keys []string) string {
	lower := strings.ToLower(name)
	limit := min(max(len(lower)/4, 1), 4)
	best, bestDist := "", limit+1
	sorted := append([]string(nil), keys...)
	sort.Strings(sorted)
	for _, k := range sorted {
		if d := editDistance(lower, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, by bytes (the
// keys are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
