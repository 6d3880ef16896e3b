package protocol

import (
	"reflect"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// shareErrorResponse fills the answer of the share group APIs (KIP-932)
// whose errors are per group or per partition; false for other requests.
func shareErrorResponse(req kmsg.Request, resp kmsg.Response, code int16) bool {
	switch r := req.(type) {
	case *kmsg.ShareGroupDescribeRequest:
		out := resp.(*kmsg.ShareGroupDescribeResponse)
		for _, g := range r.GroupIDs {
			dg := kmsg.NewShareGroupDescribeResponseGroup()
			dg.GroupID, dg.ErrorCode = g, code
			out.Groups = append(out.Groups, dg)
		}
	case *kmsg.DescribeShareGroupOffsetsRequest:
		out := resp.(*kmsg.DescribeShareGroupOffsetsResponse)
		for _, g := range r.Groups {
			dg := kmsg.NewDescribeShareGroupOffsetsResponseGroup()
			dg.GroupID, dg.ErrorCode = g.GroupID, code
			out.Groups = append(out.Groups, dg)
		}
	case *kmsg.InitializeShareGroupStateRequest, *kmsg.ReadShareGroupStateRequest, *kmsg.WriteShareGroupStateRequest,
		*kmsg.DeleteShareGroupStateRequest, *kmsg.ReadShareGroupStateSummaryRequest:
		stateKeyErrors(req, resp, code)
	default:
		return false
	}
	return true
}

// stateKeyErrors answers a share-group state request (83-87) with code for
// every key. The five requests and responses share one layout, walked by
// reflection: Topics[].TopicID and Topics[].Partitions[].Partition, the
// response's partitions with ErrorCode (and their defaults, as the kmsg
// constructors set them).
func stateKeyErrors(req kmsg.Request, resp kmsg.Response, code int16) {
	in := reflect.ValueOf(req).Elem().FieldByName("Topics")
	outField := reflect.ValueOf(resp).Elem().FieldByName("Topics")
	out := reflect.MakeSlice(outField.Type(), in.Len(), in.Len())
	for i := range in.Len() {
		t, ot := in.Index(i), out.Index(i)
		setDefaults(ot)
		ot.FieldByName("TopicID").Set(t.FieldByName("TopicID"))
		ps := t.FieldByName("Partitions")
		ops := reflect.MakeSlice(ot.FieldByName("Partitions").Type(), ps.Len(), ps.Len())
		for j := range ps.Len() {
			op := ops.Index(j)
			setDefaults(op)
			op.FieldByName("Partition").Set(ps.Index(j).FieldByName("Partition"))
			op.FieldByName("ErrorCode").SetInt(int64(code))
		}
		ot.FieldByName("Partitions").Set(ops)
	}
	outField.Set(out)
}

// setDefaults calls the kmsg Default method of an addressable struct.
func setDefaults(v reflect.Value) {
	if d := v.Addr().MethodByName("Default"); d.IsValid() {
		d.Call(nil)
	}
}
