package handlers

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestNotControllerACLs: an ACL change answered NOT_CONTROLLER by a
// controller that lost its leadership is retried at the new one, as the
// other forwarded admin requests are.
func TestNotControllerACLs(t *testing.T) {
	create := kmsg.NewPtrCreateACLsResponse()
	ok, lost := kmsg.NewCreateACLsResponseResult(), kmsg.NewCreateACLsResponseResult()
	lost.ErrorCode = kerr.NotController.Code
	create.Results = []kmsg.CreateACLsResponseResult{ok}
	if NotController(create) {
		t.Error("a successful CreateAcls answer taken for NOT_CONTROLLER")
	}
	create.Results = append(create.Results, lost)
	if !NotController(create) {
		t.Error("CreateAcls NOT_CONTROLLER not recognised")
	}
	del := kmsg.NewPtrDeleteACLsResponse()
	r := kmsg.NewDeleteACLsResponseResult()
	r.ErrorCode = kerr.NotController.Code
	del.Results = []kmsg.DeleteACLsResponseResult{r}
	if !NotController(del) {
		t.Error("DeleteAcls NOT_CONTROLLER not recognised")
	}
}
