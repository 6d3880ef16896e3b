package protocol

import (
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// errorCodes collects every ErrorCode field anywhere in v.
func errorCodes(v reflect.Value) []int16 {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return nil
		}
		return errorCodes(v.Elem())
	case reflect.Slice:
		var out []int16
		for i := range v.Len() {
			out = append(out, errorCodes(v.Index(i))...)
		}
		return out
	case reflect.Struct:
		var out []int16
		for i := range v.NumField() {
			if v.Type().Field(i).Name == "ErrorCode" && v.Field(i).Kind() == reflect.Int16 {
				out = append(out, int16(v.Field(i).Int()))
				continue
			}
			out = append(out, errorCodes(v.Field(i))...)
		}
		return out
	}
	return nil
}

func errorRequests() map[string]struct {
	req   kmsg.Request
	codes int // error fields the answer has
} {
	name := kmsg.StringPtr("t")
	produce := kmsg.NewPtrProduceRequest()
	produce.Topics = []kmsg.ProduceRequestTopic{{Topic: "t", Partitions: []kmsg.ProduceRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	listOffsets := kmsg.NewPtrListOffsetsRequest()
	listOffsets.Topics = []kmsg.ListOffsetsRequestTopic{{Topic: "t", Partitions: []kmsg.ListOffsetsRequestTopicPartition{{Partition: 2}}}}
	metadata := kmsg.NewPtrMetadataRequest()
	metadata.SetVersion(13)
	metadata.Topics = []kmsg.MetadataRequestTopic{{Topic: name}, {Topic: kmsg.StringPtr("u")}}
	ofle := kmsg.NewPtrOffsetForLeaderEpochRequest()
	ofle.Topics = []kmsg.OffsetForLeaderEpochRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetForLeaderEpochRequestTopicPartition{{Partition: 0}}}}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t"}, {Topic: "u"}}
	deleteByName := kmsg.NewPtrDeleteTopicsRequest()
	deleteByName.TopicNames = []string{"t", "u"}
	deleteByID := kmsg.NewPtrDeleteTopicsRequest()
	deleteByID.SetVersion(6)
	deleteByID.Topics = []kmsg.DeleteTopicsRequestTopic{{Topic: name}}
	partitions := kmsg.NewPtrCreatePartitionsRequest()
	partitions.Topics = []kmsg.CreatePartitionsRequestTopic{{Topic: "t"}}
	elect := kmsg.NewPtrElectLeadersRequest()
	elect.SetVersion(1)
	elect.Topics = []kmsg.ElectLeadersRequestTopic{{Topic: "t", Partitions: []int32{0, 1}}}
	describeConfigs := kmsg.NewPtrDescribeConfigsRequest()
	describeConfigs.Resources = []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}
	alterConfigs := kmsg.NewPtrAlterConfigsRequest()
	alterConfigs.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeTopic, ResourceName: "t"}}
	incremental := kmsg.NewPtrIncrementalAlterConfigsRequest()
	incremental.Resources = []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeBroker, ResourceName: "1"}}
	reassign := kmsg.NewPtrAlterPartitionAssignmentsRequest()
	reassign.Topics = []kmsg.AlterPartitionAssignmentsRequestTopic{{Topic: "t", Partitions: []kmsg.AlterPartitionAssignmentsRequestTopicPartition{{Partition: 0}}}}
	quotas := kmsg.NewPtrAlterClientQuotasRequest()
	quotas.Entries = []kmsg.AlterClientQuotasRequestEntry{{Entity: []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: name}}}, {}}
	quorum := kmsg.NewPtrDescribeQuorumRequest()
	quorum.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "__cluster_metadata", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	shareDescribe := kmsg.NewPtrShareGroupDescribeRequest()
	shareDescribe.GroupIDs = []string{"g", "h"}
	shareOffsets := kmsg.NewPtrDescribeShareGroupOffsetsRequest()
	shareOffsets.Groups = []kmsg.DescribeShareGroupOffsetsRequestGroup{{GroupID: "g"}}
	initState := kmsg.NewPtrInitializeShareGroupStateRequest()
	initState.Topics = []kmsg.InitializeShareGroupStateRequestTopic{{Partitions: []kmsg.InitializeShareGroupStateRequestTopicPartition{{Partition: 0}, {Partition: 1}}}}
	readState := kmsg.NewPtrReadShareGroupStateRequest()
	readState.Topics = []kmsg.ReadShareGroupStateRequestTopic{{Partitions: []kmsg.ReadShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	writeState := kmsg.NewPtrWriteShareGroupStateRequest()
	writeState.Topics = []kmsg.WriteShareGroupStateRequestTopic{{Partitions: []kmsg.WriteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	deleteState := kmsg.NewPtrDeleteShareGroupStateRequest()
	deleteState.Topics = []kmsg.DeleteShareGroupStateRequestTopic{{Partitions: []kmsg.DeleteShareGroupStateRequestTopicPartition{{Partition: 0}}}}
	summary := kmsg.NewPtrReadShareGroupStateSummaryRequest()
	summary.Topics = []kmsg.ReadShareGroupStateSummaryRequestTopic{{Partitions: []kmsg.ReadShareGroupStateSummaryRequestTopicPartition{{Partition: 0}}}}
	return map[string]struct {
		req   kmsg.Request
		codes int
	}{
		"produce":                 {produce, 2},
		"list offsets":            {listOffsets, 1},
		"metadata":                {metadata, 3},
		"offset for leader epoch": {ofle, 1},
		"create topics":           {create, 2},
		"delete topics by name":   {deleteByName, 2},
		"delete topics by id":     {deleteByID, 1},
		"create partitions":       {partitions, 1},
		"elect leaders":           {elect, 3},
		"describe configs":        {describeConfigs, 1},
		"alter configs":           {alterConfigs, 1},
		"incremental alter":       {incremental, 1},
		"reassignments":           {reassign, 2},
		"describe quorum":         {quorum, 2}, // the partition's and the unset top level
		"alter client quotas":     {quotas, 2},
		"describe client quotas":  {kmsg.NewPtrDescribeClientQuotasRequest(), 1},
		"fetch":                   {kmsg.NewPtrFetchRequest(), 1},
		"api versions":            {kmsg.NewPtrApiVersionsRequest(), 1},
		"alter partition":         {kmsg.NewPtrAlterPartitionRequest(), 1},
		"broker heartbeat":        {kmsg.NewPtrBrokerHeartbeatRequest(), 1},
		"share group heartbeat":   {kmsg.NewPtrShareGroupHeartbeatRequest(), 1},
		"share group describe":    {shareDescribe, 2},
		"share fetch":             {kmsg.NewPtrShareFetchRequest(), 1},
		"share acknowledge":       {kmsg.NewPtrShareAcknowledgeRequest(), 1},
		"initialize share state":  {initState, 2},
		"read share state":        {readState, 1},
		"write share state":       {writeState, 1},
		"delete share state":      {deleteState, 1},
		"share state summary":     {summary, 1},
		"share group offsets":     {shareOffsets, 1},
		"alter share offsets":     {kmsg.NewPtrAlterShareGroupOffsetsRequest(), 1},
		"delete share offsets":    {kmsg.NewPtrDeleteShareGroupOffsetsRequest(), 1},
	}
}

func TestErrorResponseFansOut(t *testing.T) {
	code := kerr.NotController.Code
	for name, c := range errorRequests() {
		resp := ErrorResponse(c.req, code)
		if resp == nil {
			t.Errorf("%s: no response", name)
			continue
		}
		if resp.GetVersion() != c.req.GetVersion() {
			t.Errorf("%s: response v%d for request v%d", name, resp.GetVersion(), c.req.GetVersion())
		}
		codes := errorCodes(reflect.ValueOf(resp))
		if len(codes) != c.codes {
			t.Errorf("%s: %d error fields, want %d: %+v", name, len(codes), c.codes, resp)
		}
		set := 0
		for _, got := range codes {
			if got == code {
				set++
			}
		}
		want := c.codes
		if name == "describe quorum" {
			want = 1 // per partition only, as Raft answers
		}
		if set != want {
			t.Errorf("%s: %d of %d error fields carry the code: %+v", name, set, len(codes), resp)
		}
	}
}

func TestErrorResponseKeepsDefaults(t *testing.T) {
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Topics = []kmsg.CreateTopicsRequestTopic{{Topic: "t"}}
	ct := ErrorResponse(create, kerr.RequestTimedOut.Code).(*kmsg.CreateTopicsResponse)
	if ct.Topics[0].NumPartitions != -1 || ct.Topics[0].ReplicationFactor != -1 {
		t.Fatalf("create topics %+v", ct.Topics[0])
	}
	if hb := ErrorResponse(kmsg.NewPtrBrokerHeartbeatRequest(), 1).(*kmsg.BrokerHeartbeatResponse); !hb.IsFenced {
		t.Fatal("heartbeat error answer not fenced")
	}
	if br := ErrorResponse(kmsg.NewPtrBrokerRegistrationRequest(), 1).(*kmsg.BrokerRegistrationResponse); br.BrokerEpoch != -1 {
		t.Fatalf("registration epoch %d", br.BrokerEpoch)
	}
	quorum := kmsg.NewPtrDescribeQuorumRequest()
	quorum.Topics = []kmsg.DescribeQuorumRequestTopic{{Topic: "m", Partitions: []kmsg.DescribeQuorumRequestTopicPartition{{Partition: 0}}}}
	if dq := ErrorResponse(quorum, 1).(*kmsg.DescribeQuorumResponse); dq.Topics[0].Partitions[0].LeaderID != -1 {
		t.Fatalf("describe quorum leader %d", dq.Topics[0].Partitions[0].LeaderID)
	}
}

// A response with no error field anywhere it could answer is nil: the
// connection is closed.
func TestErrorResponseWithoutPlace(t *testing.T) {
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	if resp := ErrorResponse(commit, kerr.UnsupportedVersion.Code); resp != nil {
		t.Fatalf("txn offset commit: %+v", resp)
	}
}
