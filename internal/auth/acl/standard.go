package acl

import (
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
)

// Standard is Kafka's StandardAuthorizer: it decides on the ACLs of the
// cluster metadata, kept in step with the image by Apply or Replace.
//
// The decision for principal P from host H doing operation O on resource
// (type T, name N):
//
//   - a super user is always allowed;
//   - the ACLs that apply to the resource are those of type T whose pattern
//     is LITERAL N, LITERAL "*", or PREFIXED by a prefix of N;
//   - of those, an ACL matches when its principal is P or User:*, its host is
//     H or "*", and its operation is O or ALL; an ALLOW of READ, WRITE,
//     DELETE or ALTER also matches DESCRIBE, an ALLOW of ALTER_CONFIGS also
//     matches DESCRIBE_CONFIGS (a DENY implies nothing);
//   - a matching DENY denies, whatever ALLOWs match; else a matching ALLOW
//     allows;
//   - when no ACL applies to the resource at all (for any principal, host or
//     operation), allow.everyone.if.no.acl.found decides; else it is denied.
//
// Authorize reads an immutable version of the index through an atomic
// pointer, so it never waits for an update. Updates are serialized; each
// builds the next version by copying only the shards of the name maps it
// changes (a shard holds ~1/256 of a resource type's names) and the entry
// lists of the resources it changes, then swaps the pointer.
type Standard struct {
	superUsers   map[auth.Principal]bool // read only after NewStandard
	allowIfNoACL bool

	mu      sync.Mutex // serializes Apply and Replace
	current atomic.Pointer[version]
}

// NewStandard returns an authorizer without ACLs. superUsers are always
// allowed (super.users, see ParseSuperUsers); allowIfNoACL is
// allow.everyone.if.no.acl.found.
func NewStandard(superUsers []auth.Principal, allowIfNoACL bool) *Standard {
	s := &Standard{superUsers: map[auth.Principal]bool{}, allowIfNoACL: allowIfNoACL}
	for _, p := range superUsers {
		s.superUsers[p] = true
	}
	s.current.Store(&version{})
	return s
}

// ParseSuperUsers parses super.users: principals separated by semicolons,
// "User:admin;User:broker". Blank items are ignored.
func ParseSuperUsers(s string) ([]auth.Principal, error) {
	var out []auth.Principal
	for item := range strings.SplitSeq(s, ";") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := ParsePrincipal(item)
		if err != nil {
			return nil, fmt.Errorf("super.users: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

var _ Authorizer = (*Standard)(nil)

// Authorize implements Authorizer.
func (s *Standard) Authorize(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	if s.superUsers[p] {
		return true
	}
	idx := s.current.Load().index(rt)
	if idx == nil {
		return s.allowIfNoACL
	}
	q := query{p: p, host: host, op: op}
	if q.check(idx.literal.get(name)) {
		return false
	}
	if name != WildcardResource && q.check(idx.literal.get(WildcardResource)) {
		return false
	}
	for _, n := range idx.prefixLengths {
		if n > len(name) {
			break
		}
		if q.check(idx.prefixed.get(name[:n])) {
			return false
		}
	}
	switch {
	case q.allowed:
		return true
	case !q.applied:
		return s.allowIfNoACL
	}
	return false
}

// query is one Authorize call's progress over the ACLs that apply.
type query struct {
	p       auth.Principal
	host    string
	op      kmsg.ACLOperation
	applied bool // some ACL applies to the resource
	allowed bool // some ALLOW matched
}

// check goes through the ACLs of one pattern; it reports whether a DENY
// matched, which ends the decision.
func (q *query) check(entries []entry) (denied bool) {
	if len(entries) > 0 {
		q.applied = true
	}
	for i := range entries {
		e := &entries[i]
		if !principalMatches(e.principal, q.p) || (e.host != q.host && e.host != WildcardHost) {
			continue
		}
		if e.permission == kmsg.ACLPermissionTypeDeny {
			if e.operation == q.op || e.operation == kmsg.ACLOperationAll {
				return true
			}
			continue
		}
		if e.operation == q.op || e.operation == kmsg.ACLOperationAll || implies(e.operation, q.op) {
			q.allowed = true
		}
	}
	return false
}

// principalMatches compares an ACL's "Type:name" with p without building
// p's string.
func principalMatches(acl string, p auth.Principal) bool {
	if acl == WildcardPrincipal {
		return true
	}
	return len(acl) == len(p.Type)+1+len(p.Name) &&
		strings.HasPrefix(acl, p.Type) && acl[len(p.Type)] == ':' && acl[len(p.Type)+1:] == p.Name
}

// implies says whether an ALLOW of granted also allows op (Kafka's
// StandardAuthorizerData: DESCRIBE is implied by READ, WRITE, DELETE and
// ALTER; DESCRIBE_CONFIGS by ALTER_CONFIGS).
func implies(granted, op kmsg.ACLOperation) bool {
	switch op {
	case kmsg.ACLOperationDescribe:
		switch granted {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	case kmsg.ACLOperationDescribeConfigs:
		return granted == kmsg.ACLOperationAlterConfigs
	}
	return false
}

// Len returns the number of ACLs the authorizer holds.
func (s *Standard) Len() int { return s.current.Load().count }

// Replace makes all the ACLs the authorizer holds (a snapshot load, or the
// first image).
func (s *Standard) Replace(all map[[16]byte]Binding) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := newBuilder(&version{})
	for id, bd := range all {
		b.add(id, bd)
	}
	s.current.Store(b.v)
}

// Apply changes the ACLs by a delta: removed are the ACLs deleted (with the
// bindings they had), added the ACLs created. An id in both is removed
// first. The cost is that of the changed resources, not of all the ACLs.
func (s *Standard) Apply(removed, added map[[16]byte]Binding) {
	if len(removed) == 0 && len(added) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := newBuilder(s.current.Load())
	for id, bd := range removed {
		b.remove(id, bd)
	}
	for id, bd := range added {
		b.add(id, bd)
	}
	s.current.Store(b.v)
}

// version is one immutable state of the index.
type version struct {
	types [kmsg.ACLResourceTypeUser + 1]*typeIndex
	count int
}

// index is the ACLs of resource type rt, nil if there are none.
func (v *version) index(rt kmsg.ACLResourceType) *typeIndex {
	if int(rt) < 0 || int(rt) >= len(v.types) {
		return nil
	}
	return v.types[rt]
}

// typeIndex holds the ACLs of one resource type.
type typeIndex struct {
	literal  names // by name, "*" included
	prefixed names // by prefix
	// prefixLengths are the distinct lengths of the prefixes in prefixed,
	// ascending: Authorize looks up only the prefixes of a name that some
	// PREFIXED ACL could have.
	prefixLengths []int
	prefixCounts  map[int]int // prefixes of each length
}

// entry is one ACL as the index keeps it under its pattern.
type entry struct {
	id         [16]byte
	principal  string
	host       string
	operation  kmsg.ACLOperation
	permission kmsg.ACLPermissionType
}

const shardCount = 256

var shardSeed = maphash.MakeSeed()

// names maps resource names (or prefixes) to their ACLs, in shards so an
// update copies 1/shardCount of the map.
type names struct {
	shards [shardCount]map[string][]entry
}

func shardOf(name string) int { return int(maphash.String(shardSeed, name) % shardCount) }

func (n *names) get(name string) []entry {
	m := n.shards[shardOf(name)]
	if m == nil {
		return nil
	}
	return m[name]
}

// builder makes the next version from a base, copying what it changes the
// first time it changes it.
type builder struct {
	v           *version
	ownedTypes  map[*typeIndex]bool
	ownedShards map[*map[string][]entry]bool
}

func newBuilder(base *version) *builder {
	next := *base
	return &builder{v: &next, ownedTypes: map[*typeIndex]bool{}, ownedShards: map[*map[string][]entry]bool{}}
}

func (b *builder) typeIndex(rt kmsg.ACLResourceType) *typeIndex {
	idx := b.v.types[rt]
	if idx != nil && b.ownedTypes[idx] {
		return idx
	}
	next := &typeIndex{prefixCounts: map[int]int{}}
	if idx != nil {
		*next = *idx
		next.prefixCounts = make(map[int]int, len(idx.prefixCounts))
		for k, v := range idx.prefixCounts {
			next.prefixCounts[k] = v
		}
		next.prefixLengths = slices.Clone(idx.prefixLengths)
	}
	b.ownedTypes[next] = true
	b.v.types[rt] = next
	return next
}

// shard returns a shard of n this builder owns.
func (b *builder) shard(n *names, name string) map[string][]entry {
	i := shardOf(name)
	p := &n.shards[i]
	if !b.ownedShards[p] {
		next := make(map[string][]entry, len(*p)+1)
		for k, v := range *p {
			next[k] = v
		}
		*p = next
		b.ownedShards[p] = true
	}
	return *p
}

func (b *builder) add(id [16]byte, bd Binding) {
	if int(bd.ResourceType) < 0 || int(bd.ResourceType) >= len(b.v.types) {
		return // not a resource type any request is authorized on
	}
	idx := b.typeIndex(bd.ResourceType)
	n := &idx.literal
	if bd.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		n = &idx.prefixed
	}
	m := b.shard(n, bd.ResourceName)
	old := m[bd.ResourceName]
	if slices.ContainsFunc(old, func(e entry) bool { return e.id == id }) {
		return
	}
	// A new list: the old one may be read by Authorize on an older version.
	next := make([]entry, len(old), len(old)+1)
	copy(next, old)
	m[bd.ResourceName] = append(next, entry{id: id, principal: bd.Principal, host: bd.Host,
		operation: bd.Operation, permission: bd.Permission})
	if len(old) == 0 && n == &idx.prefixed {
		l := len(bd.ResourceName)
		if idx.prefixCounts[l]++; idx.prefixCounts[l] == 1 {
			i, _ := slices.BinarySearch(idx.prefixLengths, l)
			idx.prefixLengths = slices.Insert(idx.prefixLengths, i, l)
		}
	}
	b.v.count++
}

func (b *builder) remove(id [16]byte, bd Binding) {
	if int(bd.ResourceType) < 0 || int(bd.ResourceType) >= len(b.v.types) || b.v.types[bd.ResourceType] == nil {
		return
	}
	idx := b.typeIndex(bd.ResourceType)
	n := &idx.literal
	if bd.PatternType == kmsg.ACLResourcePatternTypePrefixed {
		n = &idx.prefixed
	}
	old := n.get(bd.ResourceName)
	i := slices.IndexFunc(old, func(e entry) bool { return e.id == id })
	if i < 0 {
		return
	}
	m := b.shard(n, bd.ResourceName)
	if len(old) == 1 {
		delete(m, bd.ResourceName)
		if n == &idx.prefixed {
			l := len(bd.ResourceName)
			if idx.prefixCounts[l]--; idx.prefixCounts[l] == 0 {
				delete(idx.prefixCounts, l)
				j, _ := slices.BinarySearch(idx.prefixLengths, l)
				idx.prefixLengths = slices.Delete(idx.prefixLengths, j, j+1)
			}
		}
	} else {
		m[bd.ResourceName] = slices.Concat(old[:i], old[i+1:])
	}
	b.v.count--
}

// AuthorizeByResourceType reports whether p may do op on at least one
// resource of type rt (Kafka's authorizeByResourceType, KIP-679: an
// idempotent producer may write if it may WRITE some topic). It holds when
// an ALLOW for p, host and op applies to a pattern that no DENY for them
// covers: a DENY on the same literal name, on every name ("*" or the empty
// prefix), or on a prefix of the pattern. It walks the type's ACLs: it is
// for rare requests (InitProducerId), not for every produce.
func (s *Standard) AuthorizeByResourceType(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	if s.superUsers[p] {
		return true
	}
	idx := s.current.Load().index(rt)
	if idx == nil {
		return s.allowIfNoACL
	}
	type pattern struct {
		name     string
		prefixed bool
	}
	var allows, denies []pattern
	collect := func(n *names, prefixed bool) {
		for _, shard := range n.shards {
			for name, entries := range shard {
				for _, e := range entries {
					if !principalMatches(e.principal, p) || (e.host != host && e.host != WildcardHost) {
						continue
					}
					switch {
					case e.permission == kmsg.ACLPermissionTypeDeny && (e.operation == op || e.operation == kmsg.ACLOperationAll):
						denies = append(denies, pattern{name, prefixed})
					case e.permission == kmsg.ACLPermissionTypeAllow &&
						(e.operation == op || e.operation == kmsg.ACLOperationAll || implies(e.operation, op)):
						allows = append(allows, pattern{name, prefixed})
					}
				}
			}
		}
	}
	collect(&idx.literal, false)
	collect(&idx.prefixed, true)
	covered := func(a pattern) bool {
		for _, d := range denies {
			switch {
			case !d.prefixed && d.name == WildcardResource,
				d.prefixed && strings.HasPrefix(a.name, d.name),
				!d.prefixed && !a.prefixed && d.name == a.name:
				return true
			}
		}
		return false
	}
	for _, a := range allows {
		if !covered(a) {
			return true
		}
	}
	return false
}
