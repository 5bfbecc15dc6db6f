package consumergroup

import "fmt"

// CheckInvariants checks a snapshot on its own:
//  1. no partition is assigned or pending revocation to two members at one
//     member epoch;
//  2. the partition-epoch index holds exactly the owners' epochs of the
//     partitions some member holds, and a partition held by several
//     members is indexed at the highest of their epochs.
func CheckInvariants(s Snapshot) error {
	for _, g := range s.Groups {
		type tp struct {
			t TopicID
			p int32
		}
		owners := map[tp]map[int32]string{}
		for _, m := range g.Members {
			for _, set := range [][]PartitionEpoch{m.Assigned, m.PendingRevocation} {
				for _, pe := range set {
					k := tp{pe.Topic, pe.Partition}
					if owners[k] == nil {
						owners[k] = map[int32]string{}
					}
					if other, ok := owners[k][m.Epoch]; ok && other != m.ID {
						return fmt.Errorf("group %s: partition %s-%d is owned by %s and %s at epoch %d", g.ID, pe.Topic, pe.Partition, other, m.ID, m.Epoch)
					}
					owners[k][m.Epoch] = m.ID
				}
			}
		}
		index := map[tp]int32{}
		for _, pe := range g.PartitionEpochs {
			index[tp{pe.Topic, pe.Partition}] = pe.Epoch
		}
		if len(index) != len(owners) {
			return fmt.Errorf("group %s: %d partitions are owned but %d are in the partition-epoch index", g.ID, len(owners), len(index))
		}
		for k, es := range owners {
			e, ok := index[k]
			if !ok {
				return fmt.Errorf("group %s: partition %s-%d is owned but not indexed", g.ID, k.t, k.p)
			}
			if _, ok := es[e]; !ok {
				return fmt.Errorf("group %s: partition %s-%d is indexed at epoch %d, no owner has that epoch", g.ID, k.t, k.p, e)
			}
		}
	}
	return nil
}
