package acl

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestBindingValidate(t *testing.T) {
	good := bind(topic, literal, "t", "User:alice", "*", read, allow)
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*Binding){
		"resource type ANY":        func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeAny },
		"resource type UNKNOWN":    func(b *Binding) { b.ResourceType = kmsg.ACLResourceTypeUnknown },
		"resource type 99":         func(b *Binding) { b.ResourceType = 99 },
		"pattern MATCH":            func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeMatch },
		"pattern ANY":              func(b *Binding) { b.PatternType = kmsg.ACLResourcePatternTypeAny },
		"operation ANY":            func(b *Binding) { b.Operation = kmsg.ACLOperationAny },
		"operation UNKNOWN":        func(b *Binding) { b.Operation = kmsg.ACLOperationUnknown },
		"permission ANY":           func(b *Binding) { b.Permission = kmsg.ACLPermissionTypeAny },
		"empty name":               func(b *Binding) { b.ResourceName = "" },
		"empty prefix":             func(b *Binding) { b.ResourceName, b.PatternType = "", prefixed },
		"principal without a type": func(b *Binding) { b.Principal = "alice" },
		"empty principal":          func(b *Binding) { b.Principal = "" },
		"cluster named other":      func(b *Binding) { b.ResourceType, b.ResourceName = cluster, "c" },
	} {
		b := good
		change(&b)
		if err := b.Validate(); err == nil {
			t.Errorf("%s: %v valid", name, b)
		}
	}
	c := bind(cluster, literal, ClusterName, "User:*", "*", kmsg.ACLOperationIdempotentWrite, allow)
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestFilterMatches(t *testing.T) {
	str := func(s string) *string { return &s }
	lit := bind(topic, literal, "orders", "User:alice", "h1", read, allow)
	star := bind(topic, literal, "*", "User:*", "*", write, deny)
	pre := bind(topic, prefixed, "ord", "User:alice", "*", read, allow)
	grp := bind(group, literal, "orders", "User:alice", "*", read, allow)
	bindings := []Binding{lit, star, pre, grp}

	f := func(change func(*Filter)) Filter { x := AnyFilter; change(&x); return x }
	for _, tc := range []struct {
		name   string
		filter Filter
		want   []Binding
	}{
		{"any", AnyFilter, bindings},
		{"resource type", f(func(x *Filter) { x.ResourceType = group }), []Binding{grp}},
		{"ANY pattern with a name compares names", f(func(x *Filter) { x.ResourceName = str("orders") }), []Binding{lit, grp}},
		{"LITERAL", f(func(x *Filter) { x.PatternType = literal }), []Binding{lit, star, grp}},
		{"PREFIXED named", f(func(x *Filter) { x.PatternType, x.ResourceName = prefixed, str("ord") }), []Binding{pre}},
		{"PREFIXED, a longer name", f(func(x *Filter) { x.PatternType, x.ResourceName = prefixed, str("orders") }), nil},
		{"MATCH: what applies to topic orders", f(func(x *Filter) {
			x.ResourceType, x.PatternType, x.ResourceName = topic, kmsg.ACLResourcePatternTypeMatch, str("orders")
		}), []Binding{lit, star, pre}},
		{"MATCH: what applies to topic x", f(func(x *Filter) {
			x.ResourceType, x.PatternType, x.ResourceName = topic, kmsg.ACLResourcePatternTypeMatch, str("x")
		}), []Binding{star}},
		{"MATCH without a name", f(func(x *Filter) { x.PatternType = kmsg.ACLResourcePatternTypeMatch }), bindings},
		{"principal is exact", f(func(x *Filter) { x.Principal = str("User:alice") }), []Binding{lit, pre, grp}},
		{"host is exact", f(func(x *Filter) { x.Host = str("*") }), []Binding{star, pre, grp}},
		{"operation", f(func(x *Filter) { x.Operation = write }), []Binding{star}},
		{"permission", f(func(x *Filter) { x.Permission = allow }), []Binding{lit, pre, grp}},
	} {
		var got []Binding
		for _, b := range bindings {
			if tc.filter.Matches(b) {
				got = append(got, b)
			}
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	}

	for _, bad := range []Filter{
		f(func(x *Filter) { x.ResourceType = kmsg.ACLResourceTypeUnknown }),
		f(func(x *Filter) { x.PatternType = kmsg.ACLResourcePatternTypeUnknown }),
		f(func(x *Filter) { x.Operation = kmsg.ACLOperationUnknown }),
		f(func(x *Filter) { x.Permission = kmsg.ACLPermissionTypeUnknown }),
	} {
		if bad.Validate() == nil {
			t.Errorf("%+v valid", bad)
		}
	}
	if err := AnyFilter.Validate(); err != nil {
		t.Fatal(err)
	}
}
