"""Message classes kafka-python 3.0.12 does not ship, built by its own JSON-schema machinery from
Kafka's message definitions in ``protocol/schemas/`` (copied verbatim from Kafka's
clients/src/main/resources/common/message and group-coordinator/src/main/resources/common/message).

- KIP-848 APIs: ConsumerGroupHeartbeat (68) v0-1, ConsumerGroupDescribe (69) v0-1 (v1's MemberType added
  from KIP-1099 / Kafka 4.0, the mirror being older).
- KIP-932 share groups: ShareGroupHeartbeat (76) v1, ShareGroupDescribe (77) v1, ShareFetch (78) v1-2,
  ShareAcknowledge (79) v1-2, as Kafka 4.2+ defines them (v0 was 4.0's early access, removed in 4.1).
  ShareFetch v2's IsRenewAck and ShareGroupHeartbeat v1's layout follow the 4.3 Java client's
  generated classes, the stored mirror of Kafka's JSON being older for those two.
- The coordinator records of consumer groups in ``__consumer_offsets`` (key versions 3-8): the
  key is an int16 record type followed by the non-flexible key struct, the value an int16 version
  followed by the flexible value struct, exactly as Kafka's CoordinatorRecordSerde writes them.
"""
from __future__ import annotations

from kafka.protocol.api_data import ApiData
from kafka.protocol.api_message import ApiMessage

_SCHEMAS = "protocol.schemas"


class ConsumerGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS): pass
class ConsumerGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS): pass
class ConsumerGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS): pass
class ConsumerGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS): pass

class ShareGroupHeartbeatRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareGroupHeartbeatResponse(ApiMessage, load_json=_SCHEMAS): pass
class ShareGroupDescribeRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareGroupDescribeResponse(ApiMessage, load_json=_SCHEMAS): pass
class ShareFetchRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareFetchResponse(ApiMessage, load_json=_SCHEMAS): pass
class ShareAcknowledgeRequest(ApiMessage, load_json=_SCHEMAS): pass
class ShareAcknowledgeResponse(ApiMessage, load_json=_SCHEMAS): pass


class ConsumerGroupMetadataKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupMetadataValue(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupPartitionMetadataKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupPartitionMetadataValue(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupMemberMetadataKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupMemberMetadataValue(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupTargetAssignmentMetadataKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupTargetAssignmentMetadataValue(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupTargetAssignmentMemberKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupTargetAssignmentMemberValue(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupCurrentMemberAssignmentKey(ApiData, load_json=_SCHEMAS): pass
class ConsumerGroupCurrentMemberAssignmentValue(ApiData, load_json=_SCHEMAS): pass


API_MESSAGES = (ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
                ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse,
                ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse, ShareGroupDescribeRequest,
                ShareGroupDescribeResponse, ShareFetchRequest, ShareFetchResponse, ShareAcknowledgeRequest,
                ShareAcknowledgeResponse)

__all__ = [name for name in dir() if name.startswith(("ConsumerGroup", "Share"))] + ["API_MESSAGES"]
