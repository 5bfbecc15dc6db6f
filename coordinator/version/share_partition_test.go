package version

import "testing"

// TestSharePartitionFacts pins the share-partition differences between
// releases that the share-partition model reads (coordinator/sharegroup).
func TestSharePartitionFacts(t *testing.T) {
	for _, c := range []struct {
		v                      Version
		renewConfig, noRegress bool
	}{
		{V4_2_0, false, false},
		{V4_2_1, false, false},
		{V4_3_0, true, false},
		{V4_3_1, true, false},
		{V4_4_0, true, true},
	} {
		p := c.v.Profile()
		if p.ShareRenewGroupConfig != c.renewConfig || p.ShareStartOffsetNoRegress != c.noRegress {
			t.Errorf("%s: ShareRenewGroupConfig %v, ShareStartOffsetNoRegress %v; want %v, %v",
				c.v, p.ShareRenewGroupConfig, p.ShareStartOffsetNoRegress, c.renewConfig, c.noRegress)
		}
	}
}
