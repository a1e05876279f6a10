package bridge

import (
	ep "github.com/berthhq/berth/sdk/protocol/envoy"
	rp "github.com/berthhq/berth/sdk/protocol/runner"
)

// KvRequestToRunner converts an envoy KV request body; nil for one of no known kind.
func KvRequestToRunner(d ep.KvRequestData) rp.KvRequestData {
	switch in := d.(type) {
	case ep.KvGetRequest:
		return rp.KvGetRequest{Keys: in.Keys}
	case ep.KvListRequest:
		var q rp.KvListQuery
		switch lq := in.Query.(type) {
		case ep.KvListAllQuery:
			q = rp.KvListAllQuery{}
		case ep.KvListRangeQuery:
			q = rp.KvListRangeQuery{Start: lq.Start, End: lq.End, Exclusive: lq.Exclusive}
		case ep.KvListPrefixQuery:
			q = rp.KvListPrefixQuery{Key: lq.Key}
		default:
			return nil
		}
		return rp.KvListRequest{Query: q, Reverse: in.Reverse, Limit: in.Limit}
	case ep.KvPutRequest:
		return rp.KvPutRequest{Keys: in.Keys, Values: in.Values}
	case ep.KvDeleteRequest:
		return rp.KvDeleteRequest{Keys: in.Keys}
	case ep.KvDeleteRangeRequest:
		return rp.KvDeleteRangeRequest{Start: in.Start, End: in.End}
	case ep.KvDropRequest:
		return rp.KvDropRequest{}
	}
	return nil
}

// KvRequestToEnvoy converts a runner KV request body (for an SDK speaking the envoy
// protocol); nil for one of no known kind.
func KvRequestToEnvoy(d rp.KvRequestData) ep.KvRequestData {
	switch in := d.(type) {
	case rp.KvGetRequest:
		return ep.KvGetRequest{Keys: in.Keys}
	case rp.KvListRequest:
		var q ep.KvListQuery
		switch lq := in.Query.(type) {
		case rp.KvListAllQuery:
			q = ep.KvListAllQuery{}
		case rp.KvListRangeQuery:
			q = ep.KvListRangeQuery{Start: lq.Start, End: lq.End, Exclusive: lq.Exclusive}
		case rp.KvListPrefixQuery:
			q = ep.KvListPrefixQuery{Key: lq.Key}
		default:
			return nil
		}
		return ep.KvListRequest{Query: q, Reverse: in.Reverse, Limit: in.Limit}
	case rp.KvPutRequest:
		return ep.KvPutRequest{Keys: in.Keys, Values: in.Values}
	case rp.KvDeleteRequest:
		return ep.KvDeleteRequest{Keys: in.Keys}
	case rp.KvDeleteRangeRequest:
		return ep.KvDeleteRangeRequest{Start: in.Start, End: in.End}
	case rp.KvDropRequest:
		return ep.KvDropRequest{}
	}
	return nil
}

// KvResponseToEnvoy converts a runner KV response body.
func KvResponseToEnvoy(d rp.KvResponseData) ep.KvResponseData {
	switch in := d.(type) {
	case rp.KvGetResponse:
		return ep.KvGetResponse{Keys: in.Keys, Values: in.Values, Metadata: mapList(in.Metadata, func(m rp.KvMetadata) ep.KvMetadata { return ep.KvMetadata(m) })}
	case rp.KvListResponse:
		return ep.KvListResponse{Keys: in.Keys, Values: in.Values, Metadata: mapList(in.Metadata, func(m rp.KvMetadata) ep.KvMetadata { return ep.KvMetadata(m) })}
	case rp.KvPutResponse:
		return ep.KvPutResponse{}
	case rp.KvDeleteResponse:
		return ep.KvDeleteResponse{}
	case rp.KvDropResponse:
		return ep.KvDropResponse{}
	case rp.KvErrorResponse:
		return ep.KvErrorResponse{Message: in.Message}
	}
	return ep.KvErrorResponse{Message: "unknown KV response"}
}

// KvResponseToRunner converts an envoy KV response body (for an SDK speaking the envoy
// protocol).
func KvResponseToRunner(d ep.KvResponseData) rp.KvResponseData {
	switch in := d.(type) {
	case ep.KvGetResponse:
		return rp.KvGetResponse{Keys: in.Keys, Values: in.Values, Metadata: mapList(in.Metadata, func(m ep.KvMetadata) rp.KvMetadata { return rp.KvMetadata(m) })}
	case ep.KvListResponse:
		return rp.KvListResponse{Keys: in.Keys, Values: in.Values, Metadata: mapList(in.Metadata, func(m ep.KvMetadata) rp.KvMetadata { return rp.KvMetadata(m) })}
	case ep.KvPutResponse:
		return rp.KvPutResponse{}
	case ep.KvDeleteResponse:
		return rp.KvDeleteResponse{}
	case ep.KvDropResponse:
		return rp.KvDropResponse{}
	case ep.KvErrorResponse:
		return rp.KvErrorResponse{Message: in.Message}
	}
	return rp.KvErrorResponse{Message: "unknown KV response"}
}
