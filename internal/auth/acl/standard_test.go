package acl

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
)

const (
	topic    = kmsg.ACLResourceTypeTopic
	group    = kmsg.ACLResourceTypeGroup
	cluster  = kmsg.ACLResourceTypeCluster
	literal  = kmsg.ACLResourcePatternTypeLiteral
	prefixed = kmsg.ACLResourcePatternTypePrefixed
	allow    = kmsg.ACLPermissionTypeAllow
	deny     = kmsg.ACLPermissionTypeDeny
	read     = kmsg.ACLOperationRead
	write    = kmsg.ACLOperationWrite
	describe = kmsg.ACLOperationDescribe
	all      = kmsg.ACLOperationAll
)

func bind(rt kmsg.ACLResourceType, pt kmsg.ACLResourcePatternType, name, principal, host string, op kmsg.ACLOperation, perm kmsg.ACLPermissionType) Binding {
	return Binding{ResourceType: rt, ResourceName: name, PatternType: pt, Principal: principal, Host: host, Operation: op, Permission: perm}
}

func withIDs(bs ...Binding) map[[16]byte]Binding {
	m := map[[16]byte]Binding{}
	for i, b := range bs {
		m[[16]byte{0: byte(i >> 8), 1: byte(i), 15: 1}] = b
	}
	return m
}

type request struct {
	principal string
	host      string
	op        kmsg.ACLOperation
	rt        kmsg.ACLResourceType
	name      string
}

func (r request) String() string {
	return fmt.Sprintf("%s@%s %s %s:%s", r.principal, r.host, r.op, r.rt, r.name)
}

func principal(t *testing.T, s string) auth.Principal {
	t.Helper()
	p, err := ParsePrincipal(s)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestStandardAuthorize(t *testing.T) {
	alice, bob := "User:alice", "User:bob"
	for _, tc := range []struct {
		name         string
		acls         []Binding
		super        string
		allowIfNoACL bool
		allowed      []request
		denied       []request
	}{{
		name:    "literal allow for one principal and operation",
		acls:    []Binding{bind(topic, literal, "orders", alice, "*", read, allow)},
		allowed: []request{{alice, "10.0.0.1", read, topic, "orders"}},
		denied: []request{
			{bob, "10.0.0.1", read, topic, "orders"},           // another principal
			{alice, "10.0.0.1", write, topic, "orders"},        // another operation
			{alice, "10.0.0.1", read, topic, "orders2"},        // another name, no ACL: default deny
			{alice, "10.0.0.1", read, group, "orders"},         // another resource type
			{"Group:alice", "10.0.0.1", read, topic, "orders"}, // another principal type
		},
	}, {
		name: "deny wins over allow",
		acls: []Binding{
			bind(topic, literal, "orders", alice, "*", all, allow),
			bind(topic, prefixed, "ord", alice, "*", write, deny),
		},
		allowed: []request{{alice, "h", read, topic, "orders"}},
		denied:  []request{{alice, "h", write, topic, "orders"}},
	}, {
		name: "deny of ALL denies every operation; deny of User:* everyone",
		acls: []Binding{
			bind(topic, literal, "t", alice, "*", read, allow),
			bind(topic, literal, "*", "User:*", "*", all, deny),
		},
		denied: []request{{alice, "h", read, topic, "t"}, {alice, "h", describe, topic, "t"}},
	}, {
		name:    "prefixed applies to names starting with the prefix",
		acls:    []Binding{bind(topic, prefixed, "app-", alice, "*", read, allow)},
		allowed: []request{{alice, "h", read, topic, "app-"}, {alice, "h", read, topic, "app-orders"}},
		denied:  []request{{alice, "h", read, topic, "app"}, {alice, "h", read, topic, "xapp-orders"}},
	}, {
		name:    "prefixed patterns of several lengths",
		acls:    []Binding{bind(topic, prefixed, "a", bob, "*", read, allow), bind(topic, prefixed, "app-x", alice, "*", read, allow)},
		allowed: []request{{alice, "h", read, topic, "app-xyz"}, {bob, "h", read, topic, "app-xyz"}},
		denied:  []request{{alice, "h", read, topic, "app-y"}},
	}, {
		name:    "literal * is every name",
		acls:    []Binding{bind(topic, literal, "*", alice, "*", read, allow)},
		allowed: []request{{alice, "h", read, topic, "anything"}, {alice, "h", read, topic, "*"}},
		denied:  []request{{bob, "h", read, topic, "anything"}},
	}, {
		name:    "prefixed * is only names starting with a star",
		acls:    []Binding{bind(topic, prefixed, "*", alice, "*", read, allow)},
		allowed: []request{{alice, "h", read, topic, "*x"}},
		denied:  []request{{alice, "h", read, topic, "x"}},
	}, {
		name:    "User:* is every principal, of every type",
		acls:    []Binding{bind(topic, literal, "t", "User:*", "*", read, allow)},
		allowed: []request{{alice, "h", read, topic, "t"}, {bob, "h", read, topic, "t"}, {"Group:g", "h", read, topic, "t"}},
	}, {
		name:    "host is exact or *",
		acls:    []Binding{bind(topic, literal, "t", alice, "10.0.0.1", read, allow), bind(topic, literal, "t", bob, "*", read, allow)},
		allowed: []request{{alice, "10.0.0.1", read, topic, "t"}, {bob, "10.9.9.9", read, topic, "t"}},
		denied:  []request{{alice, "10.0.0.2", read, topic, "t"}},
	}, {
		name:    "deny from one host",
		acls:    []Binding{bind(topic, literal, "t", alice, "*", read, allow), bind(topic, literal, "t", alice, "10.0.0.6", read, deny)},
		allowed: []request{{alice, "10.0.0.1", read, topic, "t"}},
		denied:  []request{{alice, "10.0.0.6", read, topic, "t"}},
	}, {
		name: "READ, WRITE, DELETE, ALTER allow DESCRIBE; ALTER_CONFIGS allows DESCRIBE_CONFIGS",
		acls: []Binding{
			bind(topic, literal, "r", alice, "*", read, allow),
			bind(topic, literal, "w", alice, "*", write, allow),
			bind(topic, literal, "d", alice, "*", kmsg.ACLOperationDelete, allow),
			bind(topic, literal, "a", alice, "*", kmsg.ACLOperationAlter, allow),
			bind(topic, literal, "ac", alice, "*", kmsg.ACLOperationAlterConfigs, allow),
			bind(topic, literal, "c", alice, "*", kmsg.ACLOperationCreate, allow),
			bind(topic, literal, "dc", alice, "*", kmsg.ACLOperationDescribeConfigs, allow),
		},
		allowed: []request{
			{alice, "h", describe, topic, "r"}, {alice, "h", describe, topic, "w"},
			{alice, "h", describe, topic, "d"}, {alice, "h", describe, topic, "a"},
			{alice, "h", kmsg.ACLOperationDescribeConfigs, topic, "ac"},
		},
		denied: []request{
			{alice, "h", describe, topic, "c"},  // CREATE implies nothing
			{alice, "h", describe, topic, "ac"}, // ALTER_CONFIGS is not ALTER
			{alice, "h", read, topic, "w"},      // WRITE does not imply READ
			{alice, "h", kmsg.ACLOperationAlterConfigs, topic, "dc"},
			{alice, "h", describe, topic, "dc"},
		},
	}, {
		name: "a DENY implies nothing",
		acls: []Binding{
			bind(topic, literal, "t", alice, "*", describe, allow),
			bind(topic, literal, "t", alice, "*", read, deny),
		},
		allowed: []request{{alice, "h", describe, topic, "t"}},
		denied:  []request{{alice, "h", read, topic, "t"}},
	}, {
		name:    "ALL allows every operation",
		acls:    []Binding{bind(cluster, literal, ClusterName, alice, "*", all, allow)},
		allowed: []request{{alice, "h", kmsg.ACLOperationAlter, cluster, ClusterName}, {alice, "h", kmsg.ACLOperationIdempotentWrite, cluster, ClusterName}},
	}, {
		name:    "super users are always allowed, even when denied",
		acls:    []Binding{bind(topic, literal, "*", "User:*", "*", all, deny)},
		super:   "User:admin; User:broker",
		allowed: []request{{"User:admin", "h", write, topic, "t"}, {"User:broker", "h", kmsg.ACLOperationClusterAction, cluster, ClusterName}},
		denied:  []request{{alice, "h", write, topic, "t"}, {"Group:admin", "h", write, topic, "t"}},
	}, {
		name:         "allow.everyone.if.no.acl.found: no ACL on the resource allows",
		acls:         []Binding{bind(topic, literal, "guarded", alice, "*", read, allow)},
		allowIfNoACL: true,
		allowed: []request{
			{bob, "h", write, topic, "open"},     // no ACL on this topic
			{bob, "h", read, group, "guarded"},   // nor on groups at all
			{alice, "h", read, topic, "guarded"}, // the ACL allows
		},
		// An ACL applies to the topic (for another principal): no default.
		denied: []request{{bob, "h", read, topic, "guarded"}, {alice, "h", write, topic, "guarded"}},
	}, {
		name:         "allow.everyone.if.no.acl.found: a prefixed ACL applies too",
		acls:         []Binding{bind(topic, prefixed, "secret-", alice, "*", read, allow)},
		allowIfNoACL: true,
		allowed:      []request{{bob, "h", read, topic, "public"}},
		denied:       []request{{bob, "h", read, topic, "secret-plans"}},
	}, {
		name:   "no ACLs, default deny",
		denied: []request{{alice, "h", read, topic, "t"}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			super, err := ParseSuperUsers(tc.super)
			if err != nil {
				t.Fatal(err)
			}
			s := NewStandard(super, tc.allowIfNoACL)
			s.Replace(withIDs(tc.acls...))
			if s.Len() != len(tc.acls) {
				t.Fatalf("Len %d, want %d", s.Len(), len(tc.acls))
			}
			for _, r := range tc.allowed {
				if !s.Authorize(principal(t, r.principal), r.host, r.op, r.rt, r.name) {
					t.Errorf("%s denied, want allowed", r)
				}
			}
			for _, r := range tc.denied {
				if s.Authorize(principal(t, r.principal), r.host, r.op, r.rt, r.name) {
					t.Errorf("%s allowed, want denied", r)
				}
			}
		})
	}
}

// TestStandardApply changes the ACLs by deltas and checks each version, and
// that an older version read concurrently is never changed.
func TestStandardApply(t *testing.T) {
	s := NewStandard(nil, false)
	alice := auth.User("alice")
	a := bind(topic, literal, "t", "User:alice", "*", read, allow)
	p := bind(topic, prefixed, "t", "User:alice", "*", write, allow)
	d := bind(topic, literal, "t", "User:alice", "*", read, deny)
	idA, idP, idD := [16]byte{1}, [16]byte{2}, [16]byte{3}

	s.Apply(nil, map[[16]byte]Binding{idA: a, idP: p})
	before := s.current.Load()
	if !s.Authorize(alice, "h", read, topic, "t") || !s.Authorize(alice, "h", write, topic, "tx") || s.Len() != 2 {
		t.Fatal("after adding read and prefixed write")
	}
	s.Apply(nil, map[[16]byte]Binding{idD: d})
	if s.Authorize(alice, "h", read, topic, "t") {
		t.Fatal("a deny added: read still allowed")
	}
	if got := before.types[topic].literal.get("t"); len(got) != 1 {
		t.Fatalf("the previous version changed: %d entries", len(got))
	}
	s.Apply(map[[16]byte]Binding{idD: d, idP: p}, nil)
	if !s.Authorize(alice, "h", read, topic, "t") || s.Authorize(alice, "h", write, topic, "tx") || s.Len() != 1 {
		t.Fatal("after removing the deny and the prefixed write")
	}
	if n := len(s.current.Load().types[topic].prefixLengths); n != 0 {
		t.Fatalf("prefix lengths left: %d", n)
	}
	// Removing what is not there changes nothing.
	s.Apply(map[[16]byte]Binding{{9}: a}, nil)
	if s.Len() != 1 {
		t.Fatalf("Len %d", s.Len())
	}
}

func TestStandardConcurrent(t *testing.T) {
	s := NewStandard(nil, false)
	alice := auth.User("alice")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				s.Authorize(alice, "h", read, topic, "t-5")
			}
		}
	})
	for i := range 200 {
		b := bind(topic, literal, fmt.Sprintf("t-%d", i%10), "User:alice", "*", read, allow)
		s.Apply(nil, map[[16]byte]Binding{{byte(i)}: b})
		if i >= 10 {
			s.Apply(map[[16]byte]Binding{{byte(i - 10)}: bind(topic, literal, fmt.Sprintf("t-%d", (i-10)%10), "User:alice", "*", read, allow)}, nil)
		}
	}
	close(stop)
	wg.Wait()
	if s.Len() != 10 {
		t.Fatalf("Len %d", s.Len())
	}
}

func TestParseSuperUsers(t *testing.T) {
	got, err := ParseSuperUsers("User:a;;User:b:c ; ")
	if err != nil || len(got) != 2 || got[1] != (auth.Principal{Type: "User", Name: "b:c"}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := ParseSuperUsers("admin"); err == nil || !strings.Contains(err.Error(), "super.users") {
		t.Fatalf("err %v", err)
	}
}

// BenchmarkAuthorize100k decides against 100,000 ACLs: literal ACLs on
// 50,000 topics, 40,000 prefixed ACLs of varied lengths, and 10,000 on
// groups.
func BenchmarkAuthorize100k(b *testing.B) {
	acls := map[[16]byte]Binding{}
	add := func(bd Binding) {
		acls[[16]byte{0: byte(len(acls) >> 16), 1: byte(len(acls) >> 8), 2: byte(len(acls)), 15: 7}] = bd
	}
	for i := range 50_000 {
		add(bind(topic, literal, fmt.Sprintf("topic-%06d", i), fmt.Sprintf("User:u%d", i%1000), "*", read, allow))
	}
	for i := range 40_000 {
		add(bind(topic, prefixed, fmt.Sprintf("team%05d-%s", i, strings.Repeat("x", i%8)), fmt.Sprintf("User:u%d", i%1000), "*", write, allow))
	}
	for i := range 10_000 {
		add(bind(group, literal, fmt.Sprintf("group-%d", i), fmt.Sprintf("User:u%d", i%1000), "*", read, allow))
	}
	s := NewStandard(nil, false)
	s.Replace(acls)
	if s.Len() != 100_000 {
		b.Fatalf("Len %d", s.Len())
	}
	for _, r := range []request{
		{"User:u12", "10.0.0.1", describe, topic, "topic-001012"},     // implied by a literal READ
		{"User:u42", "10.0.0.1", write, topic, "team00042-xx-orders"}, // a prefixed WRITE
		{"User:u42", "10.0.0.1", read, topic, "other"},                // no ACL: denied
	} {
		b.Run(r.name, func(b *testing.B) {
			p, _ := ParsePrincipal(r.principal)
			if got := s.Authorize(p, r.host, r.op, r.rt, r.name); got != (r.name != "other") {
				b.Fatalf("%s: %t", r, got)
			}
			b.ReportAllocs()
			for b.Loop() {
				s.Authorize(p, r.host, r.op, r.rt, r.name)
			}
		})
	}
}

func TestAuthorizeByResourceType(t *testing.T) {
	alice := auth.User("alice")
	bind := func(name string, pt kmsg.ACLResourcePatternType, perm kmsg.ACLPermissionType, op kmsg.ACLOperation) Binding {
		return Binding{ResourceType: kmsg.ACLResourceTypeTopic, ResourceName: name, PatternType: pt,
			Principal: "User:alice", Host: WildcardHost, Operation: op, Permission: perm}
	}
	allow, deny := kmsg.ACLPermissionTypeAllow, kmsg.ACLPermissionTypeDeny
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	write := kmsg.ACLOperationWrite
	for _, tc := range []struct {
		name     string
		bindings []Binding
		want     bool
	}{
		{"no ACLs", nil, false},
		{"WRITE on one topic", []Binding{bind("orders", lit, allow, write)}, true},
		{"ALL on a prefix", []Binding{bind("ord", pre, allow, kmsg.ACLOperationAll)}, true},
		{"only READ", []Binding{bind("orders", lit, allow, kmsg.ACLOperationRead)}, false},
		{"WRITE denied on the same topic", []Binding{bind("orders", lit, allow, write), bind("orders", lit, deny, write)}, false},
		{"WRITE denied by a covering prefix", []Binding{bind("orders", lit, allow, write), bind("or", pre, deny, write)}, false},
		{"WRITE denied everywhere", []Binding{bind("orders", lit, allow, write), bind(WildcardResource, lit, deny, write)}, false},
		{"WRITE denied elsewhere only", []Binding{bind("orders", lit, allow, write), bind("audit", lit, deny, write)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStandard(nil, false)
			all := map[[16]byte]Binding{}
			for i, b := range tc.bindings {
				all[[16]byte{byte(i + 1)}] = b
			}
			s.Replace(all)
			if got := s.AuthorizeByResourceType(alice, "127.0.0.1", write, kmsg.ACLResourceTypeTopic); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if !NewStandard([]auth.Principal{alice}, false).AuthorizeByResourceType(alice, "h", write, kmsg.ACLResourceTypeTopic) {
		t.Fatal("a super user may write somewhere")
	}
}

// TestAuthorizeDoesNotWaitForUpdates: Authorize reads the current version
// without the lock that serializes updates, so a decision is made while an
// update is in progress.
func TestAuthorizeDoesNotWaitForUpdates(t *testing.T) {
	s := NewStandard(nil, false)
	s.Apply(nil, map[[16]byte]Binding{{1}: bind(topic, literal, "t", "User:alice", "*", read, allow)})
	s.mu.Lock() // an update holds the lock
	defer s.mu.Unlock()
	decided := make(chan bool, 1)
	go func() { decided <- s.Authorize(auth.User("alice"), "h", read, topic, "t") }()
	select {
	case ok := <-decided:
		if !ok {
			t.Fatal("alice denied READ on t")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Authorize waited for the update lock")
	}
}
