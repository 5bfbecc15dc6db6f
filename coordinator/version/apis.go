package version

// APIRange is the request versions of one API a Kafka release accepts.
type APIRange struct{ Min, Max int16 }

// API keys (the "apiKey" of clients/src/main/resources/common/message/*Request.json)
// of the requests whose version ranges a profile lists.
const (
	APIProduce                int16 = 0
	APIFetch                  int16 = 1
	APIListOffsets            int16 = 2
	APIMetadata               int16 = 3
	APIOffsetCommit           int16 = 8
	APIOffsetFetch            int16 = 9
	APIFindCoordinator        int16 = 10
	APIJoinGroup              int16 = 11
	APIHeartbeat              int16 = 12
	APILeaveGroup             int16 = 13
	APISyncGroup              int16 = 14
	APIDescribeGroups         int16 = 15
	APIListGroups             int16 = 16
	APIApiVersions            int16 = 18
	APICreateTopics           int16 = 19
	APIDeleteTopics           int16 = 20
	APIInitProducerID         int16 = 22
	APIDeleteGroups           int16 = 42
	APIOffsetDelete           int16 = 47
	APIConsumerGroupHeartbeat int16 = 68
	APIConsumerGroupDescribe  int16 = 69
)

// groupAPIs are the APIs the group coordinator itself serves (the rest of
// APIVersions is the broker around it).
var groupAPIs = [...]int16{
	APIOffsetCommit, APIOffsetFetch, APIJoinGroup, APIHeartbeat, APILeaveGroup, APISyncGroup,
	APIDescribeGroups, APIListGroups, APIDeleteGroups, APIOffsetDelete,
	APIConsumerGroupHeartbeat, APIConsumerGroupDescribe,
	APIShareGroupHeartbeat, APIShareGroupDescribe,
}

// IsGroupAPI reports whether key is one of the group coordinator's APIs.
func IsGroupAPI(key int16) bool {
	for _, k := range groupAPIs {
		if k == key {
			return true
		}
	}
	return false
}

// APIVersions returns the request versions p's release accepts for the
// APIs groupquake's broker and coordinator implement: validVersions in
// clients/src/main/resources/common/message/*Request.json of each branch,
// less a latest version marked "latestVersionUnstable", which a broker
// neither advertises nor accepts unless the internal
// unstable.api.versions.enable is set (ApiKeys.isVersionEnabled via
// ApiVersionManager.isApiEnabled). Cross-checked with franz-go's kversion
// tables for 4.0–4.4, which are read from the broker's ApiVersions answer.
// One exception: 4.0 still advertises Produce v0–v2 for old librdkafka
// clients (KAFKA-18659) but refuses them; the range here starts at v3, what
// a broker accepts. The map is a fresh copy.
//
// It is the one table of API versions: the reference coordinator refuses
// a request outside it, and the embedded broker advertises it in ApiVersions.
func (p Profile) APIVersions() map[int16]APIRange {
	out := map[int16]APIRange{
		APIProduce:                {3, 12},
		APIFetch:                  {4, 17},
		APIListOffsets:            {1, 10},
		APIMetadata:               {0, 13},
		APIOffsetCommit:           {2, 9},
		APIOffsetFetch:            {1, 9},
		APIFindCoordinator:        {0, 6},
		APIJoinGroup:              {2, 9}, // KIP-896 (KAFKA-18269) made v2 the baseline in 4.0.0
		APIHeartbeat:              {0, 4},
		APILeaveGroup:             {0, 5},
		APISyncGroup:              {0, 5},
		APIDescribeGroups:         {0, 6},
		APIListGroups:             {0, 5},
		APIApiVersions:            {0, 4},
		APICreateTopics:           {2, 7},
		APIDeleteTopics:           {1, 6},
		APIInitProducerID:         {0, 5},
		APIDeleteGroups:           {0, 2},
		APIOffsetDelete:           {0, 0},
		APIConsumerGroupHeartbeat: {0, 1},
		APIConsumerGroupDescribe:  {0, 1},
	}
	bump := func(k, hi int16) {
		r := out[k]
		r.Max = hi
		out[k] = r
	}
	// KAFKA-19444 (apache/kafka#20116) put JoinGroup v0 and v1 back for
	// librdkafka before 2.11: on trunk (commit 4b60761), on the 4.1 branch
	// (487af01) before 4.1.0 and on the 4.0 branch (80b9abe) before 4.0.1
	// (gradle.properties "Bump version to 4.0.1", b3aeb69).
	if p.JoinGroupV0 {
		out[APIJoinGroup] = APIRange{0, 9}
	}
	// 4.1: Produce 13 and Fetch 18 (topic ids, KIP-516).
	if p.Version >= V4_1_0 {
		bump(APIProduce, 13)
		bump(APIFetch, 18)
	}
	// OffsetCommit and OffsetFetch v10 (topic ids instead of names,
	// KIP-848): KAFKA-14690 and KAFKA-14691 added v10 on trunk before 4.1
	// was branched, but marked it "latestVersionUnstable": true, which the
	// 4.1 branch keeps (4.1.0–4.1.2 advertise OffsetCommit v2–v9 and
	// OffsetFetch v1–v9). KAFKA-19186 (apache/kafka#20923, commit 9599143)
	// dropped the flag on trunk before 4.2 was released. 4.2 also serves
	// ListOffsets 11.
	if p.OffsetsTopicIDs {
		bump(APIListOffsets, 11)
		bump(APIOffsetCommit, 10)
		bump(APIOffsetFetch, 10)
	}
	// 4.4: ApiVersions 5 (KIP-1242) and DeleteGroups 3 (per-group
	// ErrorMessage, KAFKA-20620).
	if p.Version >= V4_4_0 {
		bump(APIApiVersions, 5)
		bump(APIDeleteGroups, 3)
	}
	// Share groups (KIP-932): the group coordinator's two share APIs where
	// a cluster the release formats has them on (4.2+).
	if p.ShareGroups == ShareProduction {
		share := p.ShareAPIVersions()
		for _, k := range ShareCoordinatorAPIs {
			out[k] = share[k]
		}
	}
	return out
}
