package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is a configuration's value type. The numbers are the ConfigType ids
// of the DescribeConfigs response (KIP-569), so int8(t) goes on the wire.
type Type int

const (
	TypeUnknown Type = iota
	Boolean
	String
	Int
	Short
	Long
	Double
	List
	Class
	Password
)

// String returns the name Kafka uses for the type in DescribeConfigs.
func (t Type) String() string {
	switch t {
	case Boolean:
		return "BOOLEAN"
	case String:
		return "STRING"
	case Int:
		return "INT"
	case Short:
		return "SHORT"
	case Long:
		return "LONG"
	case Double:
		return "DOUBLE"
	case List:
		return "LIST"
	case Class:
		return "CLASS"
	case Password:
		return "PASSWORD"
	}
	return "UNKNOWN"
}

// DynamicScope says whether and where a broker configuration may be changed
// at runtime (Kafka's DynamicBrokerConfig sets).
type DynamicScope int

const (
	// ReadOnly configurations are read from server.properties at start only.
	ReadOnly DynamicScope = iota
	// PerBroker configurations may be changed for one broker (resource name =
	// node id) but not as a cluster-wide default.
	PerBroker
	// ClusterWide configurations may be changed per broker or as the
	// cluster-wide default (resource name "").
	ClusterWide
)

// String returns the update mode as Kafka's generated docs name it.
func (s DynamicScope) String() string {
	switch s {
	case PerBroker:
		return "per-broker"
	case ClusterWide:
		return "cluster-wide"
	}
	return "read-only"
}

// Def defines one configuration key.
type Def struct {
	Name string
	Type Type
	// Default is the value used when nothing sets the key; nil means the
	// key has no default (Kafka's null).
	Default *string
	Doc     string
	// Validate checks a value that already passed the type check. nil means
	// any value of the type is allowed. Errors say what is allowed.
	Validate func(value string) error
	Dynamic  DynamicScope
	// Sensitive values are never returned by DescribeConfigs.
	Sensitive bool
}

// Check validates value against the definition's type and validator. The
// error names the key and says what is allowed, e.g.
// `invalid value "x" for configuration node.id: must be a 32-bit integer`.
func (d Def) Check(value string) error {
	err := checkType(d.Type, value)
	if err == nil && d.Validate != nil {
		err = d.Validate(strings.TrimSpace(value))
	}
	if err == nil {
		return nil
	}
	if d.Sensitive {
		value = "[hidden]" // never echo a secret into logs or responses
	}
	return fmt.Errorf("invalid value %q for configuration %s: %w", value, d.Name, err)
}

// checkType parses value as Kafka's ConfigDef.parseType would: surrounding
// whitespace is ignored for every type but PASSWORD.
func checkType(t Type, value string) error {
	v := strings.TrimSpace(value)
	switch t {
	case Boolean:
		if !strings.EqualFold(v, "true") && !strings.EqualFold(v, "false") {
			return fmt.Errorf("must be true or false")
		}
	case Int:
		if _, err := strconv.ParseInt(v, 10, 32); err != nil {
			return fmt.Errorf("must be a 32-bit integer")
		}
	case Short:
		if _, err := strconv.ParseInt(v, 10, 16); err != nil {
			return fmt.Errorf("must be a 16-bit integer")
		}
	case Long:
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return fmt.Errorf("must be a 64-bit integer")
		}
	case Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) {
			return fmt.Errorf("must be a number")
		}
	}
	return nil
}

// normalize renders a value that passed checkType the way Kafka renders the
// parsed value (ConfigDef.convertToString): numbers canonical, booleans lower
// case, lists trimmed and comma-joined, doubles as Java's Double.toString.
func normalize(t Type, value string) string {
	v := strings.TrimSpace(value)
	switch t {
	case Boolean:
		return strings.ToLower(v)
	case Int, Short, Long:
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return v
		}
		return strconv.FormatInt(n, 10)
	case Double:
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return v
		}
		return javaDouble(f)
	case List:
		return strings.Join(splitList(v), ",")
	case Password:
		return value
	}
	return v
}

// splitList splits a LIST value as Kafka does: comma separated, each item
// trimmed; an empty (or blank) string is the empty list.
func splitList(v string) []string {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil
	}
	parts := strings.Split(v, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// javaDouble formats f like java.lang.Double.toString: plain decimal with at
// least one fractional digit for 1e-3 <= |f| < 1e7, otherwise computerized
// scientific notation ("1.7976931348623157E308").
func javaDouble(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	abs := math.Abs(f)
	if abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // e.g. 1.7976931348623157e+308
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// Validators. Each receives a value that already passed the type check.

func atLeast(min int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min {
			return fmt.Errorf("must be an integer >= %d", min)
		}
		return nil
	}
}

func intBetween(min, max int64) func(string) error {
	return func(v string) error {
		n, _ := strconv.ParseInt(v, 10, 64)
		if n < min || n > max {
			return fmt.Errorf("must be an integer between %d and %d", min, max)
		}
		return nil
	}
}

func floatBetween(min, max float64) func(string) error {
	return func(v string) error {
		f, _ := strconv.ParseFloat(v, 64)
		if f < min || f > max {
			return fmt.Errorf("must be a number between %s and %s", javaDouble(min), javaDouble(max))
		}
		return nil
	}
}

// oneOf accepts exactly one of the given strings (case-sensitive, as
// Kafka's ValidString).
func oneOf(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				return nil
			}
		}
		return fmt.Errorf("must be one of: %s", strings.Join(allowed, ", "))
	}
}

// oneOfFold accepts one of the given strings in any case (Kafka's
// CaseInsensitiveValidString).
func oneOfFold(allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if strings.EqualFold(v, a) {
				return nil
			}
		}
		return fmt.Errorf("must be one of (case insensitive): %s", strings.Join(allowed, ", "))
	}
}

// listOf accepts a list whose every item is one of allowed (Kafka's
// ValidList.in); the empty list is refused.
func listOf(allowed ...string) func(string) error {
	return func(v string) error {
		items := splitList(v)
		if len(items) == 0 {
			return fmt.Errorf("must be a non-empty list of: %s", strings.Join(allowed, ", "))
		}
		for _, item := range items {
			if err := oneOf(allowed...)(item); err != nil {
				return fmt.Errorf("every item must be one of: %s (got %q)", strings.Join(allowed, ", "), item)
			}
		}
		return nil
	}
}

// gzipLevel validates the gzip level: 1..9, or -1 for the codec's default.
func gzipLevel(v string) error {
	n, _ := strconv.ParseInt(v, 10, 64)
	if n == -1 || (n >= 1 && n <= 9) {
		return nil
	}
	return fmt.Errorf("must be an integer between 1 and 9, or -1 for the default")
}

func ptr(s string) *string { return &s }
