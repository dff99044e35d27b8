package server

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/auth"
	"gregor/internal/auth/acl"
	"gregor/internal/metadata"
)

// standardAuthorizerClasses are the authorizer.class.name values that turn
// on Kafka's StandardAuthorizer (ACLs in the cluster metadata). Kafka's
// ZooKeeper-era AclAuthorizer has no KRaft equivalent and is refused.
var standardAuthorizerClasses = []string{"org.apache.kafka.metadata.authorizer.StandardAuthorizer"}

// newStandardAuthorizer returns the StandardAuthorizer authorizer.class.name
// asks for, empty, or nil when it is unset (no authorization, as Kafka).
func (s *Server) newStandardAuthorizer() (*acl.Standard, error) {
	class := strings.TrimSpace(s.cfg.AuthorizerClassName)
	if class == "" {
		return nil, nil
	}
	known := false
	for _, c := range standardAuthorizerClasses {
		known = known || c == class
	}
	if !known {
		return nil, fmt.Errorf("authorizer.class.name=%s is not supported: use %s (ACLs in the cluster metadata) or leave it unset",
			class, standardAuthorizerClasses[0])
	}
	supers, err := acl.ParseSuperUsers(strings.Join(s.cfg.SuperUsers, ";"))
	if err != nil {
		return nil, fmt.Errorf("super.users: %w", err)
	}
	return acl.NewStandard(supers, s.cfg.AllowEveryoneIfNoACLFound), nil
}

// aclPublisher keeps a broker's authorizer in step with its metadata
// image: each delta's ACL changes, the first image's ACLs included.
type aclPublisher struct{ std *acl.Standard }

func (p aclPublisher) Publish(d *metadata.Delta, _ *metadata.Image) { p.std.Apply(d.ACLChanges()) }

// imageAuthorizer authorizes against the ACLs of a metadata image it reads
// when asked: the controller listener's, whose image is the controller's
// own (it has no publisher chain). The index is rebuilt when the image's
// ACL set changes (a delta copies the map only when it changes ACLs).
type imageAuthorizer struct {
	image func() *metadata.Image
	std   *acl.Standard

	mu    sync.Mutex
	built uintptr // the ACL map std holds
}

func (a *imageAuthorizer) Authorize(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType, name string) bool {
	a.refresh()
	return a.std.Authorize(p, host, op, rt, name)
}

// AuthorizeByResourceType answers whether p may do op on some resource of
// type rt (KIP-679's idempotent-producer rule).
func (a *imageAuthorizer) AuthorizeByResourceType(p auth.Principal, host string, op kmsg.ACLOperation, rt kmsg.ACLResourceType) bool {
	a.refresh()
	return a.std.AuthorizeByResourceType(p, host, op, rt)
}

func (a *imageAuthorizer) refresh() {
	acls := a.image().ACLs
	ptr := reflect.ValueOf(acls).Pointer()
	a.mu.Lock()
	defer a.mu.Unlock()
	if ptr != a.built {
		a.std.Replace(acls)
		a.built = ptr
	}
}
