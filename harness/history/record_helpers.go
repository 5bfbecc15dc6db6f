package history

// Typed helpers for the standalone facts of the vocabulary: they pick the F and the type so a
// writer cannot get either wrong. Calls (produce, commit, join, sync, heartbeat, leave, describe,
// fault-start, fault-stop) go through Invoke and then OK, Fail or Info.

// Assigned records onPartitionsAssigned: a.Partitions were added to the member's owned set.
func (r *Recorder) Assigned(process string, a Assignment, why string) (Event, error) {
	return r.Info(process, FAssigned, a, why)
}

// Revoked records onPartitionsRevoked, before the member acknowledges the revocation.
func (r *Recorder) Revoked(process string, a Assignment, why string) (Event, error) {
	return r.Info(process, FRevoked, a, why)
}

// Lost records onPartitionsLost: the member learned it had been fenced.
func (r *Recorder) Lost(process string, a Assignment, why string) (Event, error) {
	return r.Info(process, FLost, a, why)
}

// Consumed records one record handed to the application.
func (r *Recorder) Consumed(process string, c Consume) (Event, error) {
	return r.Info(process, FConsume, c, "")
}

// Fenced records that the member learned it was fenced (m.Error names the Kafka error).
func (r *Recorder) Fenced(process string, m Membership, why string) (Event, error) {
	return r.Info(process, FFenced, m, why)
}

// Left records a clean leave.
func (r *Recorder) Left(process string, m Membership, why string) (Event, error) {
	return r.Info(process, FLeft, m, why)
}

// SessionExpired records that the coordinator expired the member's session.
func (r *Recorder) SessionExpired(process string, m Membership, why string) (Event, error) {
	return r.Info(process, FSessionExpired, m, why)
}

// Restarted records what a member's supervisor did (r.Action) on the member's own process.
func (r *Recorder) Restarted(process string, v Restart, why string) (Event, error) {
	return r.Info(process, FRestart, v, why)
}

// BeginPhase records that a phase of the run began (PhaseSetup … PhaseTeardown).
func (r *Recorder) BeginPhase(name, why string) (Event, error) {
	return r.Info("harness", FPhase, Phase{Name: name}, why)
}

// BeginFinal records the start of the final phase with the members the
// harness runs then.
func (r *Recorder) BeginFinal(members []string, why string) (Event, error) {
	return r.Info("harness", FPhase, Phase{Name: PhaseFinal, Members: members}, why)
}

// Stalled records that the harness process did not run from s.From to s.To (its pulse woke late).
func (r *Recorder) Stalled(s Stall, why string) (Event, error) {
	return r.Info("harness", FStall, s, why)
}
