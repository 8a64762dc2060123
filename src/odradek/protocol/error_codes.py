"""Kafka error codes, and the one exception type the broker raises to carry one.

Errors are values of ``ErrorCode`` at the protocol edge and ``KafkaError`` exceptions inside the broker;
``error_code_of`` is the one place that turns any exception into the code a response carries.

Codes and names are Apache Kafka's (``Errors.java``, up to Kafka 4.x). ``retriable`` follows Kafka's
client: true exactly when Kafka's exception for the code is a ``RetriableException``, i.e. the same
request may succeed if sent again (perhaps after refreshing metadata). The descriptions are our own.
"""

from __future__ import annotations

from enum import IntEnum


class ErrorCode(IntEnum):
    """A Kafka protocol error code, with whether a client may retry and a short description."""

    _value_: int
    retriable: bool
    message: str

    # The defaults exist only so that a lookup by value, ``ErrorCode(3)``, type-checks; every member
    # below spells out all three.
    def __new__(cls, code: int, retriable: bool = False, message: str = "") -> ErrorCode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.retriable = retriable
        member.message = message
        return member

    @classmethod
    def for_code(cls, code: int) -> ErrorCode:
        """The member for a code read off the wire; codes we do not know read as UNKNOWN_SERVER_ERROR."""
        try:
            return cls(code)
        except ValueError:
            return cls.UNKNOWN_SERVER_ERROR

    UNKNOWN_SERVER_ERROR = (-1, False, "The server failed in an unexpected way while handling the request.")
    NONE = (0, False, "")
    OFFSET_OUT_OF_RANGE = (1, False, "The offset asked for is outside the range the partition log holds.")
    CORRUPT_MESSAGE = (
        2,
        True,
        "A message failed its CRC check, has an invalid size, or is otherwise corrupt.",
    )
    UNKNOWN_TOPIC_OR_PARTITION = (3, True, "This broker does not host the topic-partition.")
    INVALID_FETCH_SIZE = (4, False, "The fetch size asked for is invalid.")
    LEADER_NOT_AVAILABLE = (5, True, "The partition has no leader right now; an election is in progress.")
    NOT_LEADER_OR_FOLLOWER = (6, True, "This broker is not the leader (or not a replica) of the partition.")
    REQUEST_TIMED_OUT = (7, True, "The request did not complete in time.")
    BROKER_NOT_AVAILABLE = (8, False, "The broker is not available.")
    REPLICA_NOT_AVAILABLE = (9, True, "A replica of the partition is not available.")
    MESSAGE_TOO_LARGE = (10, False, "A message is larger than the largest message the broker accepts.")
    STALE_CONTROLLER_EPOCH = (11, False, "The request came from a controller that is no longer current.")
    OFFSET_METADATA_TOO_LARGE = (12, False, "The metadata string of the offset commit is too long.")
    NETWORK_EXCEPTION = (13, True, "The connection closed before a response arrived.")
    COORDINATOR_LOAD_IN_PROGRESS = (
        14,
        True,
        "The coordinator is still loading its state and cannot answer yet.",
    )
    COORDINATOR_NOT_AVAILABLE = (15, True, "The coordinator is not available.")
    NOT_COORDINATOR = (16, True, "This broker is not the coordinator for that group or transactional id.")
    INVALID_TOPIC_EXCEPTION = (17, False, "The topic name is invalid or the operation is not allowed on it.")
    RECORD_LIST_TOO_LARGE = (18, False, "A record batch is larger than the topic's segment size.")
    NOT_ENOUGH_REPLICAS = (19, True, "Fewer replicas are in sync than min.insync.replicas requires.")
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = (
        20,
        True,
        "The records were appended, but fewer replicas than required were in sync.",
    )
    INVALID_REQUIRED_ACKS = (21, False, "The produce request's acks value is not one the broker accepts.")
    ILLEGAL_GENERATION = (22, False, "The group generation id in the request is not the current one.")
    INCONSISTENT_GROUP_PROTOCOL = (
        23,
        False,
        "The member's protocols do not match the group's, or its protocol type or list is empty.",
    )
    INVALID_GROUP_ID = (24, False, "The group id is invalid.")
    UNKNOWN_MEMBER_ID = (25, False, "The coordinator does not know this member id.")
    INVALID_SESSION_TIMEOUT = (
        26,
        False,
        "The session timeout is outside group.min.session.timeout.ms .. group.max.session.timeout.ms.",
    )
    REBALANCE_IN_PROGRESS = (27, False, "The group is rebalancing; the member has to rejoin.")
    INVALID_COMMIT_OFFSET_SIZE = (28, False, "The offset commit data has an invalid size.")
    TOPIC_AUTHORIZATION_FAILED = (29, False, "Not authorized to access the topic.")
    GROUP_AUTHORIZATION_FAILED = (30, False, "Not authorized to access the group.")
    CLUSTER_AUTHORIZATION_FAILED = (31, False, "Not authorized to perform this cluster operation.")
    INVALID_TIMESTAMP = (32, False, "A message timestamp is outside the accepted range.")
    UNSUPPORTED_SASL_MECHANISM = (33, False, "The broker does not offer the SASL mechanism asked for.")
    ILLEGAL_SASL_STATE = (34, False, "The request is not allowed in the connection's current SASL state.")
    UNSUPPORTED_VERSION = (35, False, "The broker does not support this version of the API.")
    TOPIC_ALREADY_EXISTS = (36, False, "A topic with this name already exists.")
    INVALID_PARTITIONS = (37, False, "The number of partitions is invalid (below 1, or not an increase).")
    INVALID_REPLICATION_FACTOR = (
        38,
        False,
        "The replication factor is below 1 or above the number of live brokers.",
    )
    INVALID_REPLICA_ASSIGNMENT = (39, False, "The replica assignment is invalid.")
    INVALID_CONFIG = (40, False, "A configuration name or value is invalid.")
    NOT_CONTROLLER = (41, True, "This broker is not the controller of the cluster.")
    INVALID_REQUEST = (
        42,
        False,
        "The request is malformed or not valid for this broker; see the broker log.",
    )
    UNSUPPORTED_FOR_MESSAGE_FORMAT = (43, False, "The request needs a newer message format than the log has.")
    POLICY_VIOLATION = (44, False, "The request breaks a policy configured on the broker.")
    OUT_OF_ORDER_SEQUENCE_NUMBER = (45, False, "The broker received a producer sequence number out of order.")
    DUPLICATE_SEQUENCE_NUMBER = (46, False, "The broker already received this producer sequence number.")
    INVALID_PRODUCER_EPOCH = (47, False, "The producer epoch is older than the current one.")
    INVALID_TXN_STATE = (48, False, "The transactional operation is not valid in the transaction's state.")
    INVALID_PRODUCER_ID_MAPPING = (
        49,
        False,
        "The producer id is not the one currently assigned to the transactional id.",
    )
    INVALID_TRANSACTION_TIMEOUT = (
        50,
        False,
        "The transaction timeout is above the broker's transaction.max.timeout.ms.",
    )
    CONCURRENT_TRANSACTIONS = (51, True, "Another operation on the same transaction is still in progress.")
    TRANSACTION_COORDINATOR_FENCED = (
        52,
        False,
        "The transaction coordinator sending the markers is no longer the current one.",
    )
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = (53, False, "Not authorized to use the transactional id.")
    SECURITY_DISABLED = (54, False, "Security features are disabled on the broker.")
    OPERATION_NOT_ATTEMPTED = (
        55,
        False,
        "The broker skipped this operation because another one in the same batch failed.",
    )
    KAFKA_STORAGE_ERROR = (56, True, "A disk error occurred while accessing the partition's log.")
    LOG_DIR_NOT_FOUND = (57, False, "The log directory is not one of the broker's configured log.dirs.")
    SASL_AUTHENTICATION_FAILED = (58, False, "SASL authentication failed.")
    UNKNOWN_PRODUCER_ID = (
        59,
        False,
        "The broker has no state for this producer id (its records may have been deleted by retention).",
    )
    REASSIGNMENT_IN_PROGRESS = (60, False, "A partition reassignment is in progress.")
    DELEGATION_TOKEN_AUTH_DISABLED = (61, False, "Delegation tokens are not enabled.")
    DELEGATION_TOKEN_NOT_FOUND = (62, False, "The delegation token was not found.")
    DELEGATION_TOKEN_OWNER_MISMATCH = (63, False, "The principal is not the owner or a renewer of the token.")
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = (
        64,
        False,
        "Delegation token requests are not allowed on this kind of connection or authentication.",
    )
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = (65, False, "Not authorized for the delegation token operation.")
    DELEGATION_TOKEN_EXPIRED = (66, False, "The delegation token has expired.")
    INVALID_PRINCIPAL_TYPE = (67, False, "The principal type is not supported.")
    NON_EMPTY_GROUP = (68, False, "The group still has members.")
    GROUP_ID_NOT_FOUND = (69, False, "No group with this id exists.")
    FETCH_SESSION_ID_NOT_FOUND = (70, True, "The fetch session id is not known to the broker.")
    INVALID_FETCH_SESSION_EPOCH = (71, True, "The fetch session epoch is not the expected one.")
    LISTENER_NOT_FOUND = (
        72,
        True,
        "The leader has no listener with the name of the listener the request came in on.",
    )
    TOPIC_DELETION_DISABLED = (73, False, "Deleting topics is disabled on this cluster.")
    FENCED_LEADER_EPOCH = (74, True, "The leader epoch in the request is older than the broker's.")
    UNKNOWN_LEADER_EPOCH = (75, True, "The leader epoch in the request is newer than the broker's.")
    UNSUPPORTED_COMPRESSION_TYPE = (
        76,
        False,
        "The client's request version cannot read the partition's compression type.",
    )
    STALE_BROKER_EPOCH = (77, False, "The broker epoch in the request is not the current one.")
    OFFSET_NOT_AVAILABLE = (
        78,
        True,
        "The new leader's high watermark has not caught up yet, so the offset cannot be answered.",
    )
    MEMBER_ID_REQUIRED = (79, False, "The member has to join again with the member id it was given.")
    PREFERRED_LEADER_NOT_AVAILABLE = (80, True, "The preferred leader is not available.")
    GROUP_MAX_SIZE_REACHED = (81, False, "The group already has as many members as it may have.")
    FENCED_INSTANCE_ID = (
        82,
        False,
        "Another member with the same group.instance.id has taken this static member's place.",
    )
    ELIGIBLE_LEADERS_NOT_AVAILABLE = (83, True, "No eligible leader is available for the partition.")
    ELECTION_NOT_NEEDED = (84, True, "The partition already has the leader the election would pick.")
    NO_REASSIGNMENT_IN_PROGRESS = (85, False, "No partition reassignment is in progress.")
    GROUP_SUBSCRIBED_TO_TOPIC = (
        86,
        False,
        "Offsets of a topic cannot be deleted while the group is subscribed to it.",
    )
    INVALID_RECORD = (87, False, "A record failed the broker's validation and was rejected.")
    UNSTABLE_OFFSET_COMMIT = (88, True, "Offsets are pending in an open transaction and must settle first.")
    THROTTLING_QUOTA_EXCEEDED = (89, True, "The request exceeds the client's throttling quota.")
    PRODUCER_FENCED = (90, False, "A newer producer with the same transactional id has fenced this one.")
    RESOURCE_NOT_FOUND = (91, False, "The request refers to a resource that does not exist.")
    DUPLICATE_RESOURCE = (92, False, "The request names the same resource more than once.")
    UNACCEPTABLE_CREDENTIAL = (93, False, "The credential does not meet the acceptance criteria.")
    INCONSISTENT_VOTER_SET = (
        94,
        False,
        "The sender or receiver of a voter request is not an expected voter.",
    )
    INVALID_UPDATE_VERSION = (95, False, "The update version is invalid.")
    FEATURE_UPDATE_FAILED = (96, False, "Updating the finalized features failed on the server.")
    PRINCIPAL_DESERIALIZATION_FAILURE = (
        97,
        False,
        "The forwarded request's principal could not be deserialized.",
    )
    SNAPSHOT_NOT_FOUND = (98, False, "The snapshot asked for does not exist.")
    POSITION_OUT_OF_RANGE = (99, False, "The position is negative or beyond the end of the snapshot.")
    UNKNOWN_TOPIC_ID = (100, True, "This broker does not host a topic with this id.")
    DUPLICATE_BROKER_REGISTRATION = (101, False, "This broker id is already registered.")
    BROKER_ID_NOT_REGISTERED = (102, False, "This broker id is not registered.")
    INCONSISTENT_TOPIC_ID = (103, True, "The topic id in the request does not match the log's topic id.")
    INCONSISTENT_CLUSTER_ID = (104, False, "The cluster id in the request does not match the server's.")
    TRANSACTIONAL_ID_NOT_FOUND = (105, False, "The transactional id does not exist.")
    FETCH_SESSION_TOPIC_ID_ERROR = (106, True, "The fetch session used topic ids inconsistently.")
    INELIGIBLE_REPLICA = (107, False, "The proposed ISR contains a replica that is not eligible.")
    NEW_LEADER_ELECTED = (
        108,
        False,
        "The partition state was updated by AlterPartition, but the leader changed meanwhile.",
    )
    OFFSET_MOVED_TO_TIERED_STORAGE = (109, False, "The offset has moved to tiered storage.")
    FENCED_MEMBER_EPOCH = (
        110,
        False,
        "The member epoch is fenced; the member must give up its partitions and rejoin.",
    )
    UNRELEASED_INSTANCE_ID = (
        111,
        False,
        "Another member still holds this instance id and has to leave first.",
    )
    UNSUPPORTED_ASSIGNOR = (112, False, "The group does not support this assignor or assignor version.")
    STALE_MEMBER_EPOCH = (
        113,
        False,
        "The member epoch is stale; retry after the next heartbeat returns the current one.",
    )
    MISMATCHED_ENDPOINT_TYPE = (114, False, "The request reached an endpoint of the wrong type.")
    UNSUPPORTED_ENDPOINT_TYPE = (115, False, "This endpoint type is not supported.")
    UNKNOWN_CONTROLLER_ID = (116, False, "The controller id is not known.")
    UNKNOWN_SUBSCRIPTION_ID = (117, False, "The telemetry subscription id is unknown or outdated.")
    TELEMETRY_TOO_LARGE = (118, False, "The pushed telemetry is larger than the broker accepts.")
    INVALID_REGISTRATION = (119, False, "The controller considers the broker registration invalid.")
    TRANSACTION_ABORTABLE = (
        120,
        False,
        "The transaction hit an error; aborting it lets the transactional id be used again.",
    )
    INVALID_RECORD_STATE = (
        121,
        False,
        "The record is not in a state that allows acknowledging its delivery.",
    )
    SHARE_SESSION_NOT_FOUND = (122, True, "The share session does not exist.")
    INVALID_SHARE_SESSION_EPOCH = (123, True, "The share session epoch is not the expected one.")
    FENCED_STATE_EPOCH = (124, False, "The share-group state epoch does not match the share coordinator's.")
    INVALID_VOTER_KEY = (125, False, "The voter key does not match the receiving replica's key.")
    DUPLICATE_VOTER = (126, False, "The voter is already in the voter set.")
    VOTER_NOT_FOUND = (127, False, "The voter is not in the voter set.")
    INVALID_REGULAR_EXPRESSION = (128, False, "The regular expression is invalid.")
    REBOOTSTRAP_REQUIRED = (
        129,
        False,
        "The client's metadata is stale; it should start again from its bootstrap servers.",
    )
    STREAMS_INVALID_TOPOLOGY = (130, False, "The streams topology is invalid.")
    STREAMS_INVALID_TOPOLOGY_EPOCH = (131, False, "The streams topology epoch is invalid.")
    STREAMS_TOPOLOGY_FENCED = (132, False, "The streams topology epoch is out of date.")
    SHARE_SESSION_LIMIT_REACHED = (133, True, "The broker already has as many share sessions as it allows.")


class KafkaError(Exception):
    """An error inside the broker that a response reports as ``error_code``.

    ``error_message`` is the optional detail that responses with an ErrorMessage field send to the
    client (e.g. why a config is invalid); None means the client gets no detail.
    """

    def __init__(self, error_code: ErrorCode, error_message: str | None = None) -> None:
        super().__init__(error_message if error_message is not None else error_code.message)
        self.error_code = error_code
        self.error_message = error_message

    @property
    def retriable(self) -> bool:
        return self.error_code.retriable

    def __str__(self) -> str:
        detail = self.error_message if self.error_message is not None else self.error_code.message
        return f"{self.error_code.name}: {detail}"

    def __repr__(self) -> str:
        return f"KafkaError({self.error_code.name}, {self.error_message!r})"


def error_code_of(exc: BaseException) -> ErrorCode:
    """The code a response reports for an exception: a KafkaError's own, otherwise UNKNOWN_SERVER_ERROR."""
    if isinstance(exc, KafkaError):
        return exc.error_code
    return ErrorCode.UNKNOWN_SERVER_ERROR
