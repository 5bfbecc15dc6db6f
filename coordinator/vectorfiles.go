package coordinator

import "embed"

// VectorFiles holds the conformance vectors (testdata/classic, offsets,
// consumer, share: the datadriven files TestConformance runs) so that a binary
// installed away from the source tree can replay them against a broker
// (harness/differential.Vectors, groupquake diff).
//
//go:embed testdata/classic/*.txt testdata/offsets/*.txt testdata/consumer/*.txt testdata/share/*.txt
var VectorFiles embed.FS
