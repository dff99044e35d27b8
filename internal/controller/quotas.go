package controller

import (
	"context"
	"math"
	"net/netip"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"gregor/internal/metadata"
)

// quotaValueKind is how a quota key's value is checked: Kafka's ConfigDef
// type of the key in QuotaConfig (LONG, INT or DOUBLE).
type quotaValueKind int

const (
	quotaLong quotaValueKind = iota
	quotaInt
	quotaDouble
)

// userClientQuotaKeys are the quota keys of entities with a user and/or a
// client-id part (QuotaConfig.userAndClientQuotaConfigs); ipQuotaKeys those
// of ip entities (QuotaConfig.ipConfigs).
var (
	userClientQuotaKeys = map[string]quotaValueKind{
		"producer_byte_rate":       quotaLong,
		"consumer_byte_rate":       quotaLong,
		"request_percentage":       quotaDouble,
		"controller_mutation_rate": quotaDouble,
	}
	ipQuotaKeys = map[string]quotaValueKind{
		"connection_creation_rate": quotaInt,
	}
)

// AlterClientQuotas sets and removes client quotas (Kafka's
// ClientQuotaControlManager.alterClientQuotas) with ClientQuotaRecords, all
// the request's records in one batch; with validate_only it only answers.
// The answer comes after the records are committed and replayed.
//
// Each entity gets one result, in the order of first mention, with the
// entity's parts as user, client-id, ip. INVALID_REQUEST, with Kafka's
// message, and nothing changed for that entity when:
//   - its parts are empty, of a type other than user, client-id and ip,
//     or of one type twice; a name is empty ("" — the default is null);
//   - ip is combined with user or client-id, or an ip name is not an IP
//     address;
//   - a key is set twice in its ops, or the entity comes twice in the
//     request (every occurrence fails: Kafka still applies the first one
//     while answering it with the error);
//   - a key set is not one of its kind's (producer_byte_rate,
//     consumer_byte_rate, request_percentage, controller_mutation_rate for
//     user and client-id; connection_creation_rate for ip), its value is
//     not above 0 (NaN included, which Kafka lets through), or a key of an
//     integral type (all but the two DOUBLE ones) gets a fractional value
//     or one too large for its type.
//
// Removing a key the entity does not have is no error and writes nothing;
// removed keys are not checked against the valid ones (as Kafka). Setting
// a key to the value it has writes nothing either.
func (c *Controller) AlterClientQuotas(ctx context.Context, req *kmsg.AlterClientQuotasRequest) *kmsg.AlterClientQuotasResponse {
	return write(c, ctx, req.ValidateOnly,
		func(img *metadata.Image) ([]metadata.Record, *kmsg.AlterClientQuotasResponse) {
			return alterClientQuotas(img, req)
		},
		func(e *kerr.Error) *kmsg.AlterClientQuotasResponse {
			resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
			for _, entry := range req.Entries {
				r := kmsg.NewAlterClientQuotasResponseEntry()
				r.ErrorCode, r.Entity = e.Code, echoQuotaEntity(entry.Entity)
				resp.Entries = append(resp.Entries, r)
			}
			return resp
		})
}

// echoQuotaEntity is a request entity's parts, as given, for its result.
func echoQuotaEntity(parts []kmsg.AlterClientQuotasRequestEntryEntity) []kmsg.AlterClientQuotasResponseEntryEntity {
	out := make([]kmsg.AlterClientQuotasResponseEntryEntity, 0, len(parts))
	for _, p := range parts {
		e := kmsg.NewAlterClientQuotasResponseEntryEntity()
		e.Type, e.Name = p.Type, p.Name
		out = append(out, e)
	}
	return out
}

// requestQuotaEntity is the entity of an AlterClientQuotas entry, or the
// reason (Kafka's message) it is none.
func requestQuotaEntity(parts []kmsg.AlterClientQuotasRequestEntryEntity) (metadata.QuotaEntity, error) {
	data := make([]metadata.ClientQuotaEntityData, len(parts))
	for i, p := range parts {
		data[i] = metadata.ClientQuotaEntityData{EntityType: p.Type, EntityName: p.Name}
	}
	return metadata.QuotaEntityFromData(data)
}

// alterClientQuotas is the manager: the records and the response for a
// request against img.
func alterClientQuotas(img *metadata.Image, req *kmsg.AlterClientQuotasRequest) ([]metadata.Record, *kmsg.AlterClientQuotasResponse) {
	entities := make([]metadata.QuotaEntity, len(req.Entries))
	entityErrs := make([]error, len(req.Entries))
	times := map[metadata.QuotaEntity]int{}
	for i, entry := range req.Entries {
		entities[i], entityErrs[i] = requestQuotaEntity(entry.Entity)
		if entityErrs[i] == nil {
			times[entities[i]]++
		}
	}

	var records []metadata.Record
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	answered := map[metadata.QuotaEntity]bool{}
	for i := range req.Entries {
		r := kmsg.NewAlterClientQuotasResponseEntry()
		var result apiError
		if err := entityErrs[i]; err != nil {
			r.Entity = echoQuotaEntity(req.Entries[i].Entity)
			result = errWith(kerr.InvalidRequest, "%s", err.Error())
		} else {
			e := entities[i]
			if answered[e] {
				continue
			}
			answered[e] = true
			for _, p := range e.Data() {
				re := kmsg.NewAlterClientQuotasResponseEntryEntity()
				re.Type, re.Name = p.EntityType, p.EntityName
				r.Entity = append(r.Entity, re)
			}
			if times[e] > 1 {
				result = errWith(kerr.InvalidRequest, "Ignoring duplicate entity %s", e)
			} else {
				var recs []metadata.Record
				recs, result = alterEntityQuotas(img.ClientQuotas[e], e, req.Entries[i].Ops)
				if result.err == nil {
					records = append(records, recs...)
				}
			}
		}
		r.ErrorCode, r.ErrorMessage = result.code(), result.message
		resp.Entries = append(resp.Entries, r)
	}
	return records, resp
}

// alterEntityQuotas checks one entity and its ops against its current
// quotas and returns the records that apply them.
func alterEntityQuotas(current map[string]float64, e metadata.QuotaEntity, ops []kmsg.AlterClientQuotasRequestEntryOp) ([]metadata.Record, apiError) {
	keys, result := quotaKeysOf(e)
	if result.err != nil {
		return nil, result
	}
	seen := make(map[string]bool, len(ops))
	for _, op := range ops {
		if seen[op.Key] {
			return nil, errWith(kerr.InvalidRequest, "Duplicate quota key %s not updating quota for this entity %s", op.Key, e)
		}
		seen[op.Key] = true
	}
	var records []metadata.Record
	for _, op := range ops {
		value, has := current[op.Key]
		if op.Remove {
			if has {
				records = append(records, metadata.NewRemoveClientQuotaRecord(e, op.Key))
			}
			continue
		}
		if result := checkQuotaValue(keys, op.Key, op.Value); result.err != nil {
			return nil, result
		}
		if !has || value != op.Value {
			records = append(records, metadata.NewClientQuotaRecord(e, op.Key, op.Value))
		}
	}
	return records, apiError{}
}

// quotaKeysOf checks an entity's names and combination of types
// (ClientQuotaControlManager.validateEntity and configKeysForEntityType)
// and returns the quota keys it may have.
func quotaKeysOf(e metadata.QuotaEntity) (map[string]quotaValueKind, apiError) {
	for _, p := range e.Data() {
		if p.EntityName != nil && *p.EntityName == "" {
			return nil, errWith(kerr.InvalidRequest, "Empty %s not supported", p.EntityType)
		}
	}
	if !e.IP.Present {
		return userClientQuotaKeys, apiError{}
	}
	if e.User.Present || e.ClientID.Present {
		return nil, errWith(kerr.InvalidRequest, "Invalid quota entity combination, IP entity should not be combined with User or ClientId")
	}
	if !e.IP.Default {
		// Kafka also takes a host name it can resolve; the controller does
		// no DNS lookups, so only addresses are quota entities here.
		if _, err := netip.ParseAddr(e.IP.Name); err != nil {
			return nil, errWith(kerr.InvalidRequest, "%s is not a valid IP address", e.IP.Name)
		}
	}
	return ipQuotaKeys, apiError{}
}

// checkQuotaValue is ClientQuotaControlManager.validateQuotaKeyValue.
func checkQuotaValue(keys map[string]quotaValueKind, key string, value float64) apiError {
	kind, ok := keys[key]
	if !ok {
		return errWith(kerr.InvalidRequest, "Invalid configuration key %s", key)
	}
	if !(value > 0) {
		return errWith(kerr.InvalidRequest, "Quota %s must be greater than 0", key)
	}
	switch kind {
	case quotaLong:
		if value > math.MaxInt64 {
			return errWith(kerr.InvalidRequest, "Proposed value for %s is too large for a LONG.", key)
		}
	case quotaInt:
		if value > math.MaxInt32 {
			return errWith(kerr.InvalidRequest, "Proposed value for %s is too large for an INT.", key)
		}
	case quotaDouble:
		return apiError{}
	}
	if math.Abs(math.Mod(value, 1)) > 1e-6 {
		return errWith(kerr.InvalidRequest, "%s cannot be a fractional value.", key)
	}
	return apiError{}
}
